"""Engine kinds and log formats in a config are checked against the registry, not against schema enums:
a misspelt one is refused before anything starts, with the key, the registered values and the closest
one; a new adapter is accepted with no schema edit."""

from __future__ import annotations

import copy
import gc
import re
from pathlib import Path

import pytest
from conftest import REPO
from workflow_runs import snakemake

from specsweep import engines
from specsweep.engines import ADAPTERS
from specsweep.engines.base import Engine
from specsweep.plan.config import validate_schema
from specsweep.plan.registered import check_registered
from specsweep.record.errors import ConfigError

KINDS = "external, llamacpp, sglang, vllm"
ENDPOINT = {"kind": "external", "external": {"base_url": "http://127.0.0.1:8080"}}


def _endpoint(**external: str) -> dict:
    return {**ENDPOINT, "external": {**ENDPOINT["external"], **external}}


@pytest.mark.parametrize(
    ("engine", "parsers", "key", "message"),
    [
        pytest.param(
            {"kind": "llamcpp"},
            {},
            ("engines", "e", "kind"),
            f"engines/e/kind: 'llamcpp' is not a registered engine kind ({KINDS}); did you mean 'llamacpp'?",
            id="kind",
        ),
        pytest.param(
            _endpoint(engine="sglnag"),
            {},
            ("engines", "e", "external", "engine"),
            "engines/e/external/engine: 'sglnag' is not a registered engine kind that specsweep can launch "
            "(llamacpp, sglang, vllm); did you mean 'sglang'?",
            id="external-engine",
        ),
        pytest.param(
            _endpoint(engine="external"),  # an endpoint is the engine behind it, never another endpoint
            {},
            ("engines", "e", "external", "engine"),
            "engines/e/external/engine: 'external' is not a registered engine kind that specsweep can launch "
            "(llamacpp, sglang, vllm); use one of them, or add its module (see config/README.md)",
            id="external-engine-not-launched",
        ),
        pytest.param(
            _endpoint(log_format="vlm"),
            {},
            ("engines", "e", "external", "log_format"),
            "engines/e/external/log_format: 'vlm' is not a registered log format (none, llamacpp, sglang, vllm); "
            "did you mean 'vllm'?",
            id="log-format",
        ),
        pytest.param(
            {"kind": "llamacpp"},
            {"draft": {"pattern": "x", "engines": ["llamacpp", "tensorrt"]}},
            ("profile_parsers", "draft", "engines", "1"),
            f"profile_parsers/draft/engines/1: 'tensorrt' is not a registered engine kind ({KINDS}); use one of "
            "them, or add its module (see config/README.md)",
            id="profile-parser-engine",
        ),
    ],
)
def test_a_value_the_registry_does_not_hold_is_refused_with_key_and_closest(engine, parsers, key, message):
    with pytest.raises(ConfigError) as error:
        check_registered({"engines": {"e": engine}, "profile_parsers": parsers})
    assert str(error.value) == message
    assert error.value.key == key


def test_registered_values_pass(default_config):
    config = copy.deepcopy(default_config)
    config["engines"]["endpoint"] = _endpoint(engine="sglang", log_format="sglang")
    config["profile_parsers"] = {"draft": {"pattern": "x", "engines": list(ADAPTERS)}}
    check_registered(validate_schema(config))


@pytest.fixture
def new_adapter():
    """An adapter of a new kind, as a new module under engines/ declares one (an ``Engine`` subclass naming
    its ``kind``), registered as the registry registers adapters; unregistered and gone afterwards."""

    class TextGenerationInference(Engine):
        kind = "tgi"

    discovered = engines._adapters()
    assert discovered["tgi"] is TextGenerationInference  # found by looking, not by a list
    ADAPTERS["tgi"] = discovered["tgi"]
    try:
        yield "tgi"  # not the class: a reference held until teardown would keep it alive
    finally:
        del ADAPTERS["tgi"], discovered, TextGenerationInference
        gc.collect()  # the class lived on in Engine.__subclasses__() until collected
        assert "tgi" not in engines._adapters()


def test_a_new_adapter_is_accepted_without_a_schema_edit(default_config, new_adapter):
    config = copy.deepcopy(default_config)
    config["engines"]["llama"]["kind"] = "tgi"
    config["engines"]["endpoint"] = _endpoint(engine="tgi")
    config["profile_parsers"] = {"draft": {"pattern": "x", "engines": ["tgi"]}}
    check_registered(validate_schema(config))


def test_snakemake_names_the_users_file_and_line_of_a_misspelt_kind(tmp_path: Path):
    text = (REPO / "config" / "config.yaml").read_text()
    text, count = re.subn(r"^    kind: llamacpp$", "    kind: llamcpp", text, count=1, flags=re.M)
    assert count == 1
    text = re.sub(r"^  prompts: (\S+)", lambda m: f"  prompts: {REPO / m[1]}", text, count=1, flags=re.M)
    (tmp_path / "my-sweep.yaml").write_text(text)
    line = next(i for i, written in enumerate(text.splitlines(), 1) if "kind: llamcpp" in written)
    done = snakemake(tmp_path, "-n", configfile=tmp_path / "my-sweep.yaml", cores=None)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"my-sweep.yaml:{line}: configuration error: engines/llama/kind: 'llamcpp' is not a registered engine "
        f"kind ({KINDS}); did you mean 'llamacpp'?"
    ]
    assert not (tmp_path / "results").exists()
