"""Secrets by reference (misuse): a flag or environment value ``{from_env: NAME}`` keeps the secret out of the
config, Snakemake's params and metadata and the job scripts it pickles; the job reads it where it runs, the
server gets it, and nothing written holds it."""

from __future__ import annotations

import copy
import json
import os
import shlex
import subprocess

import pytest
from conftest import results_of, run_session, session_spec

from specsweep.plan.config import ConfigError, expand, validate_schema
from specsweep.plan.launchplan import plan, shell_line


def _referencing(default_config: dict) -> dict:
    config = copy.deepcopy(default_config)
    config["configurations"]["baseline"]["args"] = {"--alias": {"from_env": "MY_ALIAS"}}
    config["configurations"]["baseline"]["env"] = {"HF_TOKEN": {"from_env": "MY_HF"}}
    return validate_schema(config)


def test_the_config_and_params_hold_only_the_variable_name(default_config):
    baseline = expand(_referencing(default_config))["baseline"]
    assert baseline.identity()["args"]["--alias"] == {"from_env": "MY_ALIAS"}
    assert baseline.identity()["env"]["HF_TOKEN"] == {"from_env": "MY_HF"}


def test_commands_sh_reads_a_reference_from_the_callers_environment(default_config):
    config = _referencing(default_config)
    planned = plan(expand(config)["baseline"], config["engines"]["llama"], config["models"])
    line = shell_line(planned)
    assert 'HF_TOKEN="${MY_HF}"' in line and '--alias "${MY_ALIAS}"' in line
    words = subprocess.run(
        ["/bin/sh", "-c", 'show() { for a; do printf "%s\\0" "$a"; done; }; show ' + line],
        capture_output=True,
        text=True,
        check=True,
        env={"MY_HF": "hf value", "MY_ALIAS": "alias $(value)"},
    ).stdout.split("\0")
    assert "HF_TOKEN=hf value" in words and words[words.index("--alias") + 1] == "alias $(value)"
    assert shlex.split(line)  # one valid shell line


def test_a_session_reads_the_reference_and_writes_it_nowhere(tmp_path, standin, model_file, monkeypatch):
    secret = "refsecret" + os.urandom(6).hex()
    monkeypatch.setenv("MY_ALIAS", secret)
    spec = session_spec(tmp_path, standin, model_file, args={"--alias": {"from_env": "MY_ALIAS"}}, runs=1)
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    log = (results_of(spec) / "server.log").read_text()
    assert "'--alias', '<redacted>'" in log  # the server got a value (the stand-in echoes its argv), redacted
    written = [p for p in results_of(spec).rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert written == [] and secret not in progress
    launch = json.loads((results_of(spec) / "launch.json").read_text())
    assert launch["configuration"]["args"]["--alias"] == {"from_env": "MY_ALIAS"}
    assert launch["argv"][launch["argv"].index("--alias") + 1] == "<redacted>"


def test_an_unset_reference_is_named_before_anything_starts(tmp_path, standin, model_file, monkeypatch):
    monkeypatch.delenv("MY_ALIAS", raising=False)
    spec = session_spec(tmp_path, standin, model_file, args={"--alias": {"from_env": "MY_ALIAS"}}, runs=1)
    error, _ = run_session(spec, monkeypatch)
    assert isinstance(error, ConfigError)
    assert "configurations/cfg/args/--alias: from_env names MY_ALIAS, which is not set" in str(error)
    assert not (results_of(spec) / "server.log").exists()


def test_a_reference_with_other_keys_is_refused(default_config):
    config = copy.deepcopy(default_config)
    config["configurations"]["baseline"]["args"] = {"--alias": {"from_env": "X", "value": "leak"}}
    with pytest.raises(ConfigError, match="configurations/baseline/args/--alias"):
        validate_schema(config)
