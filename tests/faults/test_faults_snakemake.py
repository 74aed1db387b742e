"""Faults seen through Snakemake itself, with the stand-in engine (seconds, not minutes).

What only Snakemake can show: --keep-going lets the other configurations finish, summary.csv lists
the failed one, a rerun retries just it; signals to Snakemake reach the job and stop the engine.
The keep-going sweep is the session's shared one (conftest.Sweep), which the security tests also read.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import pandas as pd
import pytest
from conftest import leftovers, snakemake, wait_for, write_config
from workflow_runs import snakemake_argv


def planned_jobs(text: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", text, flags=re.M)}


def test_keep_going_summary_lists_the_failed_configuration_and_a_rerun_retries_only_it(sweep):
    done = sweep.steps["keep-going"]
    assert done.returncode != 0
    assert "the server died during run 2/3 (1 completed) with signal SIGKILL" in done.stderr
    assert "the sweep did not finish" in done.stderr and "dies: failed (results/dies/failed/" in done.stderr
    summary = sweep.summary_after_failure.set_index("configuration")
    assert list(summary.index) == ["baseline", "hostile", "dies"]
    assert summary.loc["baseline", "status"] == "ok" and summary.loc["hostile", "status"] == "ok"
    assert summary.loc["dies", "status"].startswith("failed (results/dies/failed/")
    assert summary.loc["hostile", "runs"] == 3 and summary.loc["dies", "runs"] == 0
    kept = next((sweep.results / "dies" / "failed").iterdir())  # still there after the rerun: never deleted
    assert (kept / "runs" / "run_0.json").exists() and (kept / "launch.json").exists()
    assert "dying with SIGKILL" in (kept / "server.log").read_text()
    assert not sweep.runs_after_failure  # Snakemake removed the failed job's outputs
    assert sweep.left["keep-going"] == []

    plan = sweep.steps["dry-run"]
    assert planned_jobs(plan.stdout).get("bench") == 1 and "output: results/dies/launch.json" in plan.stdout, (
        plan.stdout[-3000:]
    )

    again = sweep.steps["rerun"]  # the fault is gone: just that configuration is measured, then summarised
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(re.findall(r"rule bench:", again.stdout + again.stderr)) == 1
    summary = pd.read_csv(sweep.results / "summary.csv")
    # every run measured; one the rate check left out under a saturated CPU still counts as measured here
    assert (summary["status"] == "ok").all() and (summary["runs"] + summary["runs_excluded"] == 3).all()
    assert all(left == [] for left in sweep.left.values())


# One case per distinct behaviour: a signal to the whole group (Ctrl-C; a scheduler's SIGTERM to the
# group takes the same path, and the job-script tests in test_faults_standin cover SIGINT and SIGTERM
# alike), and SIGTERM to Snakemake's pid alone (its graceful stop). The rerun needs only summary.csv.
@pytest.mark.parametrize(("sig", "target"), [(signal.SIGINT, "group"), (signal.SIGTERM, "pid")])
def test_signal_to_snakemake_during_a_run_leaves_no_engine_and_rerun_incomplete_recovers(
    tmp_path, standin, model_file, sig, target
):
    """``group``: Ctrl-C in a terminal, or a scheduler cancelling the job: the engine is gone within 10 s.
    ``pid``: `kill -TERM <snakemake>` alone is Snakemake's graceful stop: it lets the running job end
    (here: the stalled request times out after request_timeout_s), and nothing is left when it exits."""
    stall = tmp_path / "stall-on"
    stall.touch()
    write_config(
        tmp_path,
        standin,
        model_file,
        {
            "baseline": {
                "baseline": True,
                "env": {"STANDIN_MODE": "stall-mid-stream,fork-worker,ignore-sigterm", "STANDIN_ONLY_IF": str(stall)},
            }
        },
        warmup_requests=0,
        request_timeout_s=4,
    )
    env = {**os.environ, "SPECSWEEP_CACHE": str(tmp_path / "cache")}
    job = subprocess.Popen(
        snakemake_argv(tmp_path, "results/summary.csv"),
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
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
    if target == "pid":
        return  # a graceful stop leaves nothing incomplete: the plain rerun is the keep-going test's
    stall.unlink()
    again = snakemake(tmp_path, "--rerun-incomplete", "results/summary.csv")
    assert again.returncode == 0, again.stderr[-3000:]
    assert (pd.read_csv(tmp_path / "results" / "summary.csv")["status"] == "ok").all()
