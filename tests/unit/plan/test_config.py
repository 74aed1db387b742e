from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from specsweep.plan.config import SCHEMA, ConfigError, expand, swept_parameters, validate_schema

REPO = Path(__file__).resolve().parents[3]


def test_default_config_expands_grid_into_named_configurations(default_config):
    configurations = expand(validate_schema(default_config))
    assert list(configurations) == ["baseline", "ngram-m3", "ngram-m8", "ngram-m24", "ngram-default", "draft-model"]
    m8 = configurations["ngram-m8"]
    assert m8.group == "ngram"
    assert m8.args["--spec-ngram-simple-size-m"] == 8
    assert m8.args["--spec-ngram-simple-size-n"] == 3
    assert m8.args["-t"] == 2  # engine defaults are merged in
    assert m8.axes == {"--spec-ngram-simple-size-m": 8}
    assert configurations["baseline"].baseline and not m8.baseline


def test_schema_fills_benchmark_defaults(default_config):
    del default_config["benchmark"]
    config = validate_schema(default_config)
    assert config["benchmark"]["runs"] == 5
    assert config["benchmark"]["max_tokens"] == 500
    assert config["benchmark"]["temperature"] == 0


def test_env_is_a_sweep_axis_like_a_flag(default_config):
    default_config["configurations"]["threads"] = {"grid": {"env": {"LLAMA_ARG_THREADS": [1, 2]}}}
    configurations = expand(validate_schema(default_config))
    assert configurations["threads-LLAMA_ARG_THREADS-1"].env["LLAMA_ARG_THREADS"] == "1"
    assert configurations["threads-LLAMA_ARG_THREADS-2"].axes == {"env:LLAMA_ARG_THREADS": 2}
    assert "env:LLAMA_ARG_THREADS" in swept_parameters(configurations)


def test_swept_parameters_are_the_keys_that_differ(default_config):
    swept = swept_parameters(expand(validate_schema(default_config)))
    assert "--spec-type" in swept and "--spec-ngram-simple-size-m" in swept
    assert "-t" not in swept and "-c" not in swept


def _bad(config, edit):
    config = copy.deepcopy(config)
    edit(config)
    with pytest.raises(ConfigError) as error:
        expand(validate_schema(config))
    return str(error.value)


def test_unknown_key_is_rejected_with_its_path(default_config):
    message = _bad(default_config, lambda c: c["benchmark"].update(rnus=3))
    assert "benchmark" in message and "rnus" in message


@pytest.mark.parametrize("name", ["../x", "a/b", "has space", "", "-lead"])
def test_unsafe_names_are_rejected(default_config, name):
    message = _bad(default_config, lambda c: c["configurations"].update({name: {}}))
    assert "configurations" in message


def test_two_baselines_without_factors_are_ambiguous(default_config):
    message = _bad(default_config, lambda c: c["configurations"]["ngram-default"].update(baseline=True))
    assert "exactly one" in message and "baseline, ngram-default" in message


def test_no_baseline_is_rejected(default_config):
    message = _bad(default_config, lambda c: c["configurations"]["baseline"].update(baseline=False))
    assert "no baseline" in message


def test_grid_name_clash_is_rejected(default_config):
    def clash(c):
        c["configurations"]["ngram-m3"] = {"args": {"--spec-type": "ngram-simple"}}

    message = _bad(default_config, clash)
    assert "ngram-m3" in message and "already produces" in message


def test_grid_template_with_unknown_placeholder(default_config):
    message = _bad(default_config, lambda c: c["configurations"]["ngram"]["grid"].update(name="x{nope}"))
    assert "placeholder" in message


def test_unknown_model_reference(default_config):
    message = _bad(default_config, lambda c: c["engines"]["llama"].update(model="nope"))
    assert "engines/llama/model" in message and "smollm2-135m" in message


@pytest.mark.parametrize(
    "edit",
    [
        lambda c: c["benchmark"].update(runs=-1),
        lambda c: c["benchmark"].update(max_tokens=0),
        lambda c: c["benchmark"].update(runs="five"),
        lambda c: c["engines"]["llama"].update(env={"1BAD": "x"}),
        lambda c: c["engines"]["llama"].update(env={"A-B": "x"}),
    ],
)
def test_schema_violations(default_config, edit):
    assert "invalid configuration at" in _bad(default_config, edit)


def test_a_grid_over_a_secret_never_puts_its_value_in_a_name(default_config):
    default_config["configurations"]["auth"] = {"grid": {"env": {"HF_TOKEN": ["hf_secretvalue1", "hf_secretvalue2"]}}}
    names = [n for n in expand(validate_schema(default_config)) if n.startswith("auth")]
    assert names == ["auth-HF_TOKEN-1", "auth-HF_TOKEN-2"]


README = REPO / "config" / "README.md"
ROW = re.compile(r"^\| ((?:`[^`]+`(?:, )?)+) \| (.*) \|$")


def readme_keys() -> dict[tuple[str, str], str | None]:
    """``(section, key) -> default`` of every key row in config/README.md's ``## `section``` tables
    (None where the table has no default column)."""
    keys: dict[tuple[str, str], str | None] = {}
    section = None
    for line in README.read_text().splitlines():
        if heading := re.match(r"^## `(\w+)`", line):
            section = heading[1]
        elif line.startswith("## "):
            section = None
        elif section and (row := ROW.match(line)):
            cells = row[2].split(" | ")
            for key in re.findall(r"`([^`]+)`", row[1]):
                keys[(section, key)] = cells[0] if len(cells) == 2 else None
    return keys


def schema_keys() -> dict[tuple[str, str], object]:
    """``(section, dotted key) -> schema default`` (``MISSING`` where none) of every key in the schema."""
    schema = yaml.safe_load(SCHEMA.read_text())

    def walk(node: dict, section: str, prefix: str) -> dict[tuple[str, str], object]:
        if isinstance(node.get("additionalProperties"), dict) and "properties" in node["additionalProperties"]:
            node = node["additionalProperties"]  # a mapping of names to entries: the entry's keys
        found = {}
        for key, child in node.get("properties", {}).items():
            dotted = f"{prefix}{key}"
            found[(section, dotted)] = child.get("default", MISSING)
            found |= walk(child, section, dotted + ".")
        return found

    return {k: v for section, node in schema["properties"].items() for k, v in walk(node, section, "").items()}


MISSING = object()


def test_config_readme_documents_the_schema_keys_with_their_defaults():
    documented, schema = readme_keys(), schema_keys()
    assert set(documented) - set(schema) == set(), "config/README.md documents keys the schema does not have"
    sections = {section for section, _ in documented}
    undocumented = [
        f"{section}: {key}"
        for section, key in schema
        if section in sections
        # a key is documented by its row, its parent's (llamacpp.source.sha256) or its children's (external)
        and not any((section, k) in documented for k in _ancestors(key))
        and not any(s == section and k.startswith(key + ".") for s, k in documented)
    ]
    assert undocumented == [], "add these keys to config/README.md"
    for (section, key), default in documented.items():
        if schema[(section, key)] is not MISSING and default is not None:
            assert yaml.safe_load(default.strip("`")) == schema[(section, key)], f"{section}.{key}: default {default}"


def _ancestors(key: str) -> list[str]:
    parts = key.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (lambda c: c["benchmark"].update(load={"request_rate": [float("nan")]}), "benchmark/load/request_rate/0"),
        (lambda c: c["benchmark"].update(load={"request_rate": [float("inf")]}), "benchmark/load/request_rate/0"),
        (lambda c: c["benchmark"].update(temperature=float("nan")), "benchmark/temperature"),
        (lambda c: c["benchmark"].update(request_timeout_s=float("inf")), "benchmark/request_timeout_s"),
        (lambda c: c["benchmark"].update(runs=1000000), "benchmark/runs"),
        (lambda c: c["benchmark"].update(sessions=100000), "benchmark/sessions"),
        (lambda c: c["benchmark"].update(load={"concurrency": [10**9]}), "benchmark/load/concurrency/0"),
        (lambda c: c["benchmark"].update(load={"concurrency": [1], "windows": 10**7}), "benchmark/load/windows"),
        (lambda c: c["benchmark"].update(load={"request_rate": [1.0], "burstiness": 0}), "benchmark/load/burstiness"),
        (lambda c: c["benchmark"].update(load={"request_rate": [1.0], "burstiness": 1e6}), "benchmark/load/burstiness"),
        (
            lambda c: c["benchmark"].update(load={"request_rate": [1.0], "arrivals": "uniform"}),
            "benchmark/load/arrivals",
        ),
        (
            lambda c: c["benchmark"].update(load={"ramp_up": {"strategy": "step", "start": 1, "end": 2}}),
            "benchmark/load/ramp_up/strategy",
        ),
        (
            lambda c: c["benchmark"].update(load={"ramp_up": {"strategy": "linear", "start": 0, "end": 2}}),
            "benchmark/load/ramp_up/start",
        ),
    ],
)
def test_non_finite_numbers_and_absurd_sizes_are_refused_naming_the_key(default_config, edit, key):
    """request_rate: [.nan] planned a level 'rnan' sending everything at once; runs: 1000000 took minutes and
    gigabytes before a SystemError."""
    message = _bad(default_config, edit)
    assert f"invalid configuration at '{key}'" in message, message


def test_a_misspelt_percentile_objective_is_named_in_words_not_a_regular_expression(default_config):
    edit = lambda c: c["benchmark"].update(load={"request_rate": [1.0], "slo": {"ttft_p9x_ms": 3}})  # noqa: E731
    message = _bad(default_config, edit)
    assert "'ttft_p9x_ms' is not a key here: ttft_ms, tpot_ms, e2e_ms, or a percentile objective" in message
    assert "regex" not in message and "\\d" not in message
