"""See before you spend GPU time: the example GPU campaigns plan on this machine (no GPU, no sglang
or vllm installed, model paths that exist only on the GPU node), and the plan target writes the exact
launches without starting anything."""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import pytest
import yaml
from workflow_runs import snakemake

from specsweep.plan import config as sweep_config
from specsweep.plan.config import ConfigError
from specsweep.plan.preflight import check_files

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "config" / "examples"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "config").mkdir()
    shutil.copy(REPO / "config" / "prompts.txt", tmp_path / "config" / "prompts.txt")
    return tmp_path


def jobs(text: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", text, flags=re.M)}


def test_sglang_campaign_plans_without_gpu_or_package(workdir):
    plan = snakemake(workdir, "-n", configfile=EXAMPLES / "sglang-eagle3-steps.yaml", cores=None, timeout=600)
    assert plan.returncode == 0, plan.stderr[-3000:]
    planned = jobs(plan.stdout)
    assert planned["bench"] == 8 and planned["summary"] == 1 and planned["cycle_breakdown"] == 1
    assert "results/smollm2" not in plan.stdout  # the default sweep is replaced, not merged


def test_plan_target_writes_the_exact_launch_lines(workdir):
    done = snakemake(workdir, "results/commands.sh", configfile=EXAMPLES / "sglang-eagle3-steps.yaml", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rule bench" not in done.stdout + done.stderr and "rule engine" not in done.stdout + done.stderr
    script = (workdir / "results" / "commands.sh").read_text()
    assert (
        "env EAGLE3_PROFILE=1 NCCL_ALGO=Ring NCCL_BUFFSIZE=16777216 NCCL_MAX_NCHANNELS=16 NCCL_NTHREADS=512 "
        "NCCL_P2P_LEVEL=SYS NCCL_PROTO=LL SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 python3 -m "
        "sglang.launch_server --model-path /shared/kimi-k2.5-int4 --host 0.0.0.0 --port 8000 "
        "--trust-remote-code --tp-size 8 --mem-fraction-static 0.88 --num-continuous-decode-steps 4 "
        "--disable-custom-all-reduce --speculative-algorithm EAGLE3 "
        "--speculative-draft-model-path /data/eagle3/output_100k_sglang/4 --speculative-eagle-topk 1 "
        "--speculative-num-steps 1 --speculative-num-draft-tokens 2"
    ) in script.splitlines()
    assert sum(line.startswith("env ") for line in script.splitlines()) == 8
    assert (workdir / "results" / "plan" / "nospec-nccl-default.json").is_file()
    # the expected wall time, on the console and in the script (nothing measured here: SGLang's assumptions)
    assert "all 8 session(s): " in done.stderr and "# all 8 session(s): " in script
    assert "#   launch until ready      140.0 s  assumed (sglang)" in script.splitlines()


def test_plan_warns_of_an_inherited_variable_the_sweep_sets(workdir):
    """An NCCL_PROTO exported in the calling shell is named before anything starts, and the untuned
    configurations' launches remove it."""
    import json
    import os

    done = snakemake(
        workdir,
        "results/commands.sh",
        configfile=EXAMPLES / "sglang-eagle3-steps.yaml",
        timeout=600,
        env={**os.environ, "NCCL_PROTO": "Simple"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (
        "NCCL_PROTO=Simple is set in the calling environment and this sweep sets or unsets NCCL_PROTO"
        in done.stdout + done.stderr
    )
    untuned = json.loads((workdir / "results" / "plan" / "s1-nccl-default.json").read_text())
    assert "NCCL_PROTO" in untuned["env_unset"] and "NCCL_PROTO" not in untuned["env_set"]


def test_secrets_are_read_from_the_environment_not_written(workdir):
    config = yaml.safe_load((EXAMPLES / "vllm-eagle3.yaml").read_text())
    config["engines"]["vllm"]["env"]["HF_TOKEN"] = "hf_secret_value_123"
    config["engines"]["vllm"]["args"]["--hf-token"] = "sk-secret-456"
    (workdir / "sweep.yaml").write_text(yaml.safe_dump(config))
    done = snakemake(workdir, "results/commands.sh", configfile=workdir / "sweep.yaml", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    written = (workdir / "results" / "commands.sh").read_text() + (
        workdir / "results" / "plan" / "eagle3-k3.json"
    ).read_text()
    assert "hf_secret_value_123" not in written and "sk-secret-456" not in written
    assert 'HF_TOKEN="${HF_TOKEN}"' in written


def test_impossible_eagle_tree_is_rejected_before_anything_runs(workdir):
    config = yaml.safe_load((EXAMPLES / "sglang-eagle3-steps.yaml").read_text())
    config["factors"]["depth"]["s1"]["--speculative-num-draft-tokens"] = 5
    (workdir / "sweep.yaml").write_text(yaml.safe_dump(config))
    plan = snakemake(workdir, "-n", configfile=workdir / "sweep.yaml", cores=None, timeout=600)
    assert plan.returncode != 0
    assert (
        "configurations/s1-nccl-default: --speculative-num-draft-tokens 5 is more than the draft tree holds"
        in plan.stdout + plan.stderr
    )


def test_missing_local_model_is_still_rejected(default_config):
    config = copy.deepcopy(default_config)
    config["models"]["smollm2-135m"] = {"path": "/nonexistent/model.gguf"}
    config = sweep_config.validate_schema(config)
    with pytest.raises(ConfigError, match=r"models/smollm2-135m/path: /nonexistent/model\.gguf does not exist"):
        check_files(config)
    remote = sweep_config.validate_schema(sweep_config.load(EXAMPLES / "sglang-eagle3-steps.yaml"))
    check_files({**remote, "benchmark": {**remote["benchmark"], "prompts": str(REPO / "config" / "prompts.txt")}})


def test_plan_names_the_paths_the_sweep_uses(tmp_path, monkeypatch):
    """The plan's model and binary are the ones the model and engine rules record: one definition each."""
    from specsweep.engines.llamacpp_build import user_executable
    from specsweep.plan import launchplan
    from specsweep.record import models

    monkeypatch.chdir(tmp_path)
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "m.gguf").write_bytes(b"GGUF")
    spec = {"path": "weights/m.gguf"}  # relative: resolved against the working directory
    engine = {"kind": "llamacpp", "model": "m", "executable": "bin/llama-server", "args": {}, "env": {}}
    configuration = sweep_config.Configuration(name="c", engine="e", kind="llamacpp", baseline=True, args={}, env={})
    planned = launchplan.plan(configuration, engine, {"m": spec})
    assert planned["model"] == models.obtain("m", spec)["path"] == str(tmp_path / "weights" / "m.gguf")
    assert planned["argv"][0] == user_executable("bin/llama-server") == str(tmp_path / "bin" / "llama-server")


def test_commands_without_cores_load_the_workflow(workdir):
    """--unlock, --report and cluster executors give no --cores: the rules must still load (the summary
    job's threads come from --cores only when it is set)."""
    done = snakemake(workdir, "--unlock", configfile=EXAMPLES / "sglang-eagle3-steps.yaml", cores=None, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Unlocked working directory" in done.stdout + done.stderr


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_campaign_plans(tmp_path, example):
    """A committed example the project's own checks refuse is a broken promise (the H200 vLLM example was,
    for a window of one burst): each plans, here, with no GPU and no engine package, from a working folder
    holding the checkout's config/ as a user's clone does."""
    shutil.copytree(REPO / "config", tmp_path / "config")
    plan = snakemake(tmp_path, "-n", configfile=EXAMPLES / example, cores=None, timeout=600)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert jobs(plan.stdout).get("bench", 0) >= 1
