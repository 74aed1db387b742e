"""kill -9 of a measuring job on the real llama-server, as the OOM killer does it: Snakemake deletes the job's
outputs and nothing writes ``failed/``; the completed run must still reach ``history/`` when ``all`` is run
again (the machine-wide measuring lock is taken: run under the heavy lock)."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from conftest import REPO, kill_all, leftovers, wait_for
from support import kill_bench_job_after_run_0
from workflow_runs import snakemake

from specsweep.record.cache import cache_root

pytestmark = pytest.mark.engine


def test_kill_9_of_the_bench_job_in_run_2_keeps_run_1_in_history(tmp_path, real_engine):
    model = tmp_path / "model.gguf"
    model.symlink_to(real_engine.model)  # under tmp_path: the process walk tells our server from others'
    config = {
        "engines": {"llama": {"kind": "llamacpp", "model": "tiny", "executable": str(real_engine.server)}},
        "models": {"tiny": {"path": str(model)}},
        "benchmark": {
            "runs": 3,
            "max_tokens": 500,  # several seconds a run on one thread: time enough to kill the job during run 2
            "warmup_requests": 1,
            "warmup_max_tokens": 4,
            "prompts": str(REPO / "config" / "prompts.txt"),
        },
        "configurations": {"baseline": {"baseline": True, "args": {"-c": 4096, "-np": 1, "-t": 1}}},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "SPECSWEEP_CACHE": str(cache_root())}  # the real measuring lock
    out = tmp_path / "results" / "baseline"
    returncode, said = kill_bench_job_after_run_0(tmp_path, env, 420)  # during run 2/3
    assert returncode != 0
    assert wait_for(lambda: not leftovers(tmp_path), 10), "llama-server outlived its killed job"
    run_0 = json.loads((next(out.glob(".session*")) / "runs" / "run_0.json").read_text())
    assert not (out / "failed").exists() and not (out / "runs" / "run_0.json").exists(), said[-2000:]

    try:
        again = snakemake(tmp_path, "all", env=env, timeout=600)
    finally:
        kill_all(leftovers(tmp_path))
    assert again.returncode == 0, again.stderr[-3000:]
    [kept] = (out / "history").iterdir()
    assert json.loads((kept / "runs" / "run_0.json").read_text()) == run_0  # the killed session's run 1/3
    assert not (kept / "runs" / "run_1.json").exists()
    assert json.loads((kept / "launch.json").read_text())["status"] == "ready"
    assert "a session killed before it could keep its results" in again.stderr
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["run_0.json", "run_1.json", "run_2.json"]
    print(f"kept in {kept}: run 1/3 of the killed session, {run_0['client']['decode_tokens_per_s']:.1f} tok/s")
