"""Bad configurations: rejected before anything is built or launched, naming the key and the fix."""

from __future__ import annotations

import copy
import os

import pytest
import yaml
from conftest import REPO, leftovers
from workflow_runs import snakemake

from specsweep.plan.config import ConfigError, expand, load, validate_schema
from specsweep.plan.preflight import check

SCHEMA_FIX = "See config/README.md"


def _set(path: str, value):
    """An edit that sets config[a][b]... = value (``path`` is 'a/b/...')."""

    def edit(config):
        *parents, last = path.split("/")
        node = config
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value

    return edit


def _del(path: str):
    def edit(config):
        *parents, last = path.split("/")
        node = config
        for key in parents:
            node = node[key]
        del node[last]

    return edit


def _add(name: str):
    """An edit that adds configurations/<name> (names may contain '/', so no path splitting)."""
    return lambda config: config["configurations"].update({name: {}})


def _two_engines(config):
    config["engines"]["other"] = copy.deepcopy(config["engines"]["llama"])


def _clash(config):
    config["configurations"]["ngram-m3"] = {"args": {"--spec-type": "ngram-simple"}}


def _not_executable(config, tmp_path):
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o644)
    config["engines"]["llama"]["executable"] = str(binary)


# (case id, edit, words the message must contain: the key, and the fix)
CASES = [
    ("unknown-top-level-key", _set("benchmarks", {}), ["(top level)", "'benchmarks' was unexpected", SCHEMA_FIX]),
    ("unknown-nested-key", _set("benchmark/rnus", 3), ["'benchmark'", "'rnus' was unexpected", SCHEMA_FIX]),
    (
        "wrong-type-runs",
        _set("benchmark/runs", "five"),
        ["'benchmark/runs'", "'five' is not a whole number", SCHEMA_FIX],
    ),
    ("negative-runs", _set("benchmark/runs", -1), ["'benchmark/runs'", "minimum of 1", SCHEMA_FIX]),
    ("zero-max-tokens", _set("benchmark/max_tokens", 0), ["'benchmark/max_tokens'", "minimum of 2"]),
    # one token has no decode interval: every rate would be undefined
    ("one-max-token", _set("benchmark/max_tokens", 1), ["'benchmark/max_tokens'", "minimum of 2"]),
    ("zero-ready-timeout", _set("benchmark/ready_timeout_s", 0), ["'benchmark/ready_timeout_s'"]),
    ("negative-request-timeout", _set("benchmark/request_timeout_s", -5), ["'benchmark/request_timeout_s'"]),
    ("port-out-of-range", _set("engines/llama/port", 70000), ["'engines/llama/port'", "maximum of 65535"]),
    (
        "unknown-engine-kind",
        _set("engines/llama/kind", "tgi"),
        ["engines/llama/kind: 'tgi' is not a registered engine kind (external, llamacpp, sglang, vllm)"],
    ),
    ("bad-env-name-digit", _set("engines/llama/env", {"1BAD": "x"}), ["'engines/llama/env'", "'1BAD'"]),
    ("bad-env-name-dash", _set("configurations/baseline/env", {"A-B": "x"}), ["configurations/baseline/env", "'A-B'"]),
    ("bad-flag-name", _set("configurations/baseline/args", {"spec": 1}), ["configurations/baseline/args", "'spec'"]),
    (
        "flag-value-mapping",
        _set("configurations/baseline/args", {"--x": {"a": 1}}),
        [
            "configurations/baseline/args/--x",
            "is not allowed here; give a string, number, boolean or null, or {from_env",
        ],
    ),
    ("name-dotdot", _add("../x"), ["'configurations'", "'../x' is not a name: letters, digits"]),
    ("name-slash", _add("a/b"), ["'configurations'", "is not a name: letters, digits"]),
    ("name-space", _add("has space"), ["'configurations'", "'has space' is not a name: letters, digits"]),
    ("name-shell", _add("x; touch pwned"), ["'configurations'", "is not a name: letters, digits"]),
    ("no-baseline", _set("configurations/baseline/baseline", False), ["no baseline", "baseline: true"]),
    ("two-baselines", _set("configurations/ngram-default/baseline", True), ["exactly one", "baseline, ngram-default"]),
    ("grid-name-clash", _clash, ["configurations/ngram-m3", "already produces", "rename one of them"]),
    (
        "grid-unknown-placeholder",
        _set("configurations/ngram/grid/name", "x{nope}"),
        ["configurations/ngram/grid/name", "placeholder", "use one of {--spec-ngram-simple-size-m}"],
    ),
    (
        "grid-expands-to-unsafe-name",
        _set("configurations/ngram/grid/name", "ngram/{--spec-ngram-simple-size-m}"),
        ["configurations/ngram", "'ngram/3' is not allowed", "A-Z a-z 0-9"],
    ),
    (
        "grid-empty-axis",
        _set("configurations/ngram/grid/args", {"--spec-ngram-simple-size-m": []}),
        ["configurations/ngram/grid/args/--spec-ngram-simple-size-m", "should be non-empty"],
    ),
    (
        "unknown-engine-ref",
        _set("configurations/baseline/engine", "vlm"),
        ["configurations/baseline/engine", "'vlm' is not defined", "defined: llama"],
    ),
    ("engine-not-named", _two_engines, ["configurations/baseline", "say which with 'engine:'"]),
    ("unknown-model-ref", _set("engines/llama/model", "nope"), ["engines/llama/model", "defined: smollm2-135m"]),
    (
        "unknown-draft-model",
        _set("configurations/draft-model/draft_model", "tiny"),
        ["configurations/draft-model/draft_model", "'tiny' is not defined"],
    ),
    (
        "llamacpp-without-source",
        _del("engines/llama/llamacpp"),
        ["engines/llama", "'llamacpp: source:' pin", "'executable:'"],
    ),
    ("bad-source-sha", _set("engines/llama/llamacpp/source/sha256", "abc"), ["engines/llama/llamacpp/source/sha256"]),
    (
        "missing-model-file",
        _set("models/smollm2-135m", {"path": "/nonexistent/model.gguf"}),
        ["models/smollm2-135m/path", "/nonexistent/model.gguf does not exist", "fix the path"],
    ),
    (
        "engine-binary-not-found",
        _set("engines/llama/executable", "/nonexistent/llama-server"),
        ["engines/llama/executable", "engine binary not found", "/nonexistent/llama-server", "fix the path"],
    ),
    ("engine-binary-not-executable", _not_executable, ["engines/llama/executable", "not an executable file"]),
    (
        "missing-prompts-file",
        _set("benchmark/prompts", "nope/prompts.txt"),
        ["benchmark/prompts", "nope/prompts.txt does not exist", "one prompt per line"],
    ),
]


@pytest.mark.parametrize(("edit", "expected"), [pytest.param(e, x, id=i) for i, e, x in CASES])
def test_bad_configuration_is_rejected_with_key_and_fix(default_config, tmp_path, monkeypatch, edit, expected):
    monkeypatch.chdir(REPO)  # benchmark/prompts is relative to the working directory
    config = copy.deepcopy(default_config)
    edit(config, tmp_path) if edit is _not_executable else edit(config)
    with pytest.raises(ConfigError) as error:
        validated = validate_schema(config)
        check(validated, expand(validated))
    for words in expected:
        assert words in str(error.value)


def test_a_config_that_is_not_a_mapping(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="must be a YAML mapping"):
        load(path)


def test_the_default_config_passes(default_config, monkeypatch):
    monkeypatch.chdir(REPO)
    config = validate_schema(default_config)
    assert len(expand(config)) == 6
    check(config, expand(config))


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (_set("models/smollm2-135m", {"path": "/nonexistent/model.gguf"}), "models/smollm2-135m/path"),
        (_set("engines/llama/executable", "/nonexistent/llama-server"), "engine binary not found"),
        (
            _set("benchmark/load", {"concurrency": [1, 4]}),
            "-np 1 serves 1 request(s) at once but benchmark/load/concurrency asks for 4; set -np to at least 4",
        ),
        (
            _set("benchmark/prompts", str(REPO / "tests" / "data" / "bad-workload.jsonl")),
            "bad-workload.jsonl, line 2: unknown key(s) text",
        ),
    ],
)
def test_snakemake_refuses_a_bad_config_before_launching_anything(tmp_path, edit, expected):
    config = yaml.safe_load((REPO / "tests" / "data" / "config.yaml").read_text())
    config["benchmark"]["prompts"] = str(REPO / "config" / "prompts.txt")
    edit(config)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    done = snakemake(tmp_path, "all", env={**os.environ}, timeout=300)
    assert done.returncode != 0
    assert "configuration error:" in done.stderr and expected in done.stderr
    assert not (tmp_path / "results").exists() and not (tmp_path / "logs").exists()
    assert leftovers(tmp_path) == []
