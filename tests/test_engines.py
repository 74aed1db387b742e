"""The engine registry: adapters and log formats are found, and the schema's enums agree with them."""

from __future__ import annotations

import yaml

from specsweep.config import SCHEMA
from specsweep.engines import ADAPTERS, log_format_of, provenance_packages
from specsweep.engines.base import Engine
from specsweep.parsers import log_formats


def schema_enum(*path: str) -> list[str]:
    node = yaml.safe_load(SCHEMA.read_text())
    for key in path:
        node = node[key]
    return node["enum"]


def test_every_adapter_module_is_registered_by_its_kind():
    assert list(ADAPTERS) == ["external", "llamacpp", "sglang", "vllm"]
    assert all(issubclass(engine, Engine) and ADAPTERS[kind].kind == kind for kind, engine in ADAPTERS.items())


def test_the_schema_enums_are_the_registry():
    engine = ("properties", "engines", "additionalProperties", "properties")
    assert sorted(schema_enum(*engine, "kind")) == sorted(ADAPTERS)
    assert sorted(
        schema_enum("properties", "profile_parsers", "additionalProperties", "properties", "engines", "items")
    ) == sorted(ADAPTERS)
    assert sorted(schema_enum(*engine, "external", "properties", "log_format")) == sorted(log_formats())
    # an endpoint may declare any engine that specsweep can otherwise launch: it is then spoken to natively
    launched = sorted(kind for kind, engine_class in ADAPTERS.items() if engine_class.launches)
    assert sorted(schema_enum(*engine, "external", "properties", "engine")) == launched


def test_every_adapter_log_format_has_a_parser():
    for kind, engine in ADAPTERS.items():
        assert engine.log_format in log_formats(), f"{kind}: no parser module declares LOG_FORMAT {engine.log_format!r}"
        assert log_format_of({"kind": kind}) == engine.log_format
    assert log_format_of({"kind": "external", "external": {"log_format": "vllm"}}) == "vllm"


def test_provenance_records_each_engine_package_once():
    packages = provenance_packages()
    assert {"sglang", "vllm", "torch"} <= set(packages) and len(packages) == len(set(packages))
