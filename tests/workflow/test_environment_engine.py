"""The clean environment on the real llama-server: a variable exported in the caller's shell that the sweep
sets in some configurations (llama-server reads LLAMA_ARG_* as its flags) does not reach a configuration
that does not set it, and the console says so before launch."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml
from workflow_runs import snakemake

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.engine


def test_an_inherited_llama_arg_does_not_reach_an_untuned_launch(tmp_path):
    config = yaml.safe_load((REPO / "tests" / "data" / "config.yaml").read_text())
    config["engines"]["llama"]["args"] = {"-np": 1, "-t": 1}  # no -c: the context factor sets it
    config["benchmark"].update(prompts=str(REPO / "config" / "prompts.txt"), runs=1, max_tokens=8)
    # 768 and 1280 are multiples of 256: llama.cpp pads n_ctx to 256, so each value shows as given
    config["factors"] = {"context": {"default": {}, "tuned": {"env": {"LLAMA_ARG_CTX_SIZE": 768}}}}
    config["configurations"] = {"ctx": {"factors": ["context"], "baseline": True}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = snakemake(
        tmp_path,
        "results/ctx-default/launch.json",
        "results/ctx-tuned/launch.json",
        env={**os.environ, "LLAMA_ARG_CTX_SIZE": "1280"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    console = done.stdout + done.stderr
    assert (
        "LLAMA_ARG_CTX_SIZE=1280 is set in the calling environment and this sweep sets or unsets "
        "LLAMA_ARG_CTX_SIZE (ctx-tuned)"
    ) in console
    results = tmp_path / "results"
    untuned = json.loads((results / "ctx-default" / "launch.json").read_text())
    assert "LLAMA_ARG_CTX_SIZE" not in untuned["env"] and "LLAMA_ARG_CTX_SIZE" not in untuned["env_origin"]
    assert (
        "inherited LLAMA_ARG_CTX_SIZE=1280, which this sweep sets or unsets in some configurations: this "
        "launch runs without it" in untuned["warnings"]
    )
    assert "this launch runs without it" in (tmp_path / "logs" / "bench" / "ctx-default.log").read_text()
    assert untuned["env_origin"]["PATH"] == "default" and "HOME" in untuned["env"]
    tuned = json.loads((results / "ctx-tuned" / "launch.json").read_text())
    assert tuned["env"]["LLAMA_ARG_CTX_SIZE"] == "768" and tuned["env_origin"]["LLAMA_ARG_CTX_SIZE"] == "config"
    # what the servers really used (llama-server b11434 logs "load_model: ..., n_ctx_slot = N"; one slot):
    # the tuned one the config's value, the untuned one its default, not the shell's
    context = re.compile(r"n_ctx_slot = (\d+)")
    assert context.findall((results / "ctx-tuned" / "server.log").read_text()) == ["768"]
    untuned_contexts = context.findall((results / "ctx-default" / "server.log").read_text())
    assert len(untuned_contexts) == 1 and untuned_contexts != ["1280"]
