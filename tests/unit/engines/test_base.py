"""The engine registry: adapters and log formats are found (configs are checked against it: test_registered)."""

from __future__ import annotations

from specsweep.engines import ADAPTERS, log_format_of, provenance_packages
from specsweep.engines.base import Engine
from specsweep.parsers import log_formats


def test_every_adapter_module_is_registered_by_its_kind():
    assert list(ADAPTERS) == ["external", "llamacpp", "sglang", "vllm"]
    assert all(issubclass(engine, Engine) and ADAPTERS[kind].kind == kind for kind, engine in ADAPTERS.items())


def test_every_adapter_log_format_has_a_parser():
    for kind, engine in ADAPTERS.items():
        assert engine.log_format in log_formats(), f"{kind}: no parser module declares LOG_FORMAT {engine.log_format!r}"
        assert log_format_of({"kind": kind}) == engine.log_format
    assert log_format_of({"kind": "external", "external": {"log_format": "vllm"}}) == "vllm"


def test_provenance_records_each_engine_package_once():
    packages = provenance_packages()
    assert {"sglang", "vllm", "torch"} <= set(packages) and len(packages) == len(set(packages))
