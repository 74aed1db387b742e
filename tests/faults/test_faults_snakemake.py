"""Faults seen through Snakemake itself, with the stand-in engine (seconds, not minutes).

What only Snakemake can show: --keep-going lets the other configurations finish, summary.csv lists
the failed one, a rerun retries just it; signals to Snakemake reach the job and stop the engine.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, leftovers, wait_for


def write_config(workdir: Path, standin: Path, model: Path, configurations: dict, **benchmark) -> None:
    config = {
        "engines": {"llama": {"kind": "llamacpp", "model": "tiny", "executable": str(standin)}},
        "models": {"tiny": {"path": str(model)}},
        "benchmark": {"runs": 3, "max_tokens": 16, "warmup_max_tokens": 4, "stop_grace_s": 0.5,
                      "request_timeout_s": 20, "prompts": str(REPO / "config" / "prompts.txt"), **benchmark},
        "configurations": configurations,
    }
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def snakemake_argv(workdir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(workdir / "config.yaml"), "--cores", "1", *args]


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPECSWEEP_CACHE": str(workdir / "cache")}  # the stand-in does not load the machine
    return subprocess.run(snakemake_argv(workdir, *args), capture_output=True, text=True, timeout=600, env=env)


def planned_jobs(text: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", text, flags=re.M)}


def test_keep_going_summary_lists_the_failed_configuration_and_a_rerun_retries_only_it(tmp_path, standin,
                                                                                      model_file):
    fault = tmp_path / "fault-on"
    fault.touch()
    write_config(tmp_path, standin, model_file, {
        "baseline": {"baseline": True},
        "dies": {"env": {"STANDIN_MODE": "die-during=3", "STANDIN_ONLY_IF": str(fault)}},
        "other": {"args": {"--spec-type": "none"}},
    })
    done = snakemake(tmp_path, "--keep-going", "all")
    assert done.returncode != 0
    log = done.stderr
    assert "the server died during run 2/3 (1 completed) with signal SIGKILL" in log
    assert "the sweep did not finish" in log and "dies: failed (results/dies/failed/" in log
    summary = pd.read_csv(tmp_path / "results" / "summary.csv").set_index("configuration")
    assert list(summary.index) == ["baseline", "dies", "other"]
    assert summary.loc["baseline", "status"] == "ok" and summary.loc["other", "status"] == "ok"
    assert summary.loc["dies", "status"].startswith("failed (results/dies/failed/")
    assert summary.loc["other", "runs"] == 3 and summary.loc["dies", "runs"] == 0
    kept = next((tmp_path / "results" / "dies" / "failed").iterdir())
    assert (kept / "runs" / "run_0.json").exists() and (kept / "launch.json").exists()
    assert "dying with SIGKILL" in (kept / "server.log").read_text()
    assert not (tmp_path / "results" / "dies" / "runs").exists()  # Snakemake removed the failed job's outputs
    assert leftovers(standin) == []

    plan = snakemake(tmp_path, "-n", "all")
    jobs = planned_jobs(plan.stdout)
    assert jobs.get("bench") == 1 and "output: results/dies/launch.json" in plan.stdout, plan.stdout[-3000:]

    fault.unlink()  # the fault is gone: the rerun measures just that configuration, then summarises
    again = snakemake(tmp_path, "all")
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(re.findall(r"rule bench:", again.stdout + again.stderr)) == 1
    summary = pd.read_csv(tmp_path / "results" / "summary.csv")
    assert (summary["status"] == "ok").all() and (summary["runs"] == 3).all()
    assert leftovers(standin) == []


@pytest.mark.parametrize(("sig", "target"), [(signal.SIGINT, "group"), (signal.SIGTERM, "group"),
                                             (signal.SIGTERM, "pid")])
def test_signal_to_snakemake_during_a_run_leaves_no_engine_and_rerun_incomplete_recovers(tmp_path, standin,
                                                                                         model_file, sig, target):
    """``group``: Ctrl-C in a terminal, or a scheduler cancelling the job: the engine is gone within 10 s.
    ``pid``: `kill -TERM <snakemake>` alone is Snakemake's graceful stop: it lets the running job end
    (here: the stalled request times out after request_timeout_s), and nothing is left when it exits."""
    stall = tmp_path / "stall-on"
    stall.touch()
    write_config(tmp_path, standin, model_file, {
        "baseline": {"baseline": True, "env": {"STANDIN_MODE": "stall-mid-stream,fork-worker,ignore-sigterm",
                                               "STANDIN_ONLY_IF": str(stall)}}},
                 warmup_requests=0, request_timeout_s=4)
    env = {**os.environ, "SPECSWEEP_CACHE": str(tmp_path / "cache")}
    job = subprocess.Popen(snakemake_argv(tmp_path, "all"), env=env, text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, start_new_session=True)
    log = tmp_path / "results" / "baseline" / "server.log"
    assert wait_for(lambda: log.exists() and "stalling mid-stream" in log.read_text(), 60)
    assert len(leftovers(standin)) == 2
    if target == "group":
        os.killpg(job.pid, sig)
    else:
        job.send_signal(sig)
    sent = time.monotonic()
    gone = wait_for(lambda: not leftovers(standin), 10)
    stopped_s = time.monotonic() - sent
    output, _ = job.communicate(timeout=60)
    assert leftovers(standin) == [], f"engine processes left after Snakemake exited ({sig.name} to {target})"
    if target == "group":
        assert gone, f"engine processes left 10 s after {sig.name} to Snakemake's process group"
    else:
        assert "Will exit after finishing currently running jobs" in output
    assert job.returncode != 0
    print(f"{sig.name} to Snakemake's {target} during a run: engine gone after {stopped_s:.2f} s")
    stall.unlink()
    again = snakemake(tmp_path, "--rerun-incomplete", "all")
    assert again.returncode == 0, again.stderr[-3000:]
    assert (pd.read_csv(tmp_path / "results" / "summary.csv")["status"] == "ok").all()
