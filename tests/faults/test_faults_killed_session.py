"""A measuring job killed outright (``kill -9``, the OOM killer, a node agent) runs no ``finally``: nothing
writes ``failed/`` and Snakemake deletes its outputs. Its completed runs and load windows survive as the links
in ``results/<cfg>/.session/``, and the next session keeps them in ``history/`` before it measures."""

from __future__ import annotations

import json
import os
import shutil

from conftest import (
    executable_standin,
    kill_all,
    leftovers,
    results_of,
    run_session,
    session_spec,
    snakemake,
    spawn_driver,
    wait_for,
    write_config,
)
from support import kill_bench_job_after_run_0

LOAD = {"requests_per_window": 2, "windows": 2, "seed": 1, "slo": {}}


def test_a_sigkilled_session_keeps_its_runs_and_windows_for_the_next(tmp_path, standin, model_file, monkeypatch):
    # Completions: warmup 1, runs 2-3, window 1: 4-5, window 2: 6-7; the stand-in stalls in completion 6.
    spec = session_spec(
        tmp_path,
        standin,
        model_file,
        env={"STANDIN_MODE": "stall-mid-stream=6"},
        runs=2,
        request_timeout_s=60,
        load={**LOAD, "concurrency": [1]},
    )
    spec["windows"] = {"c1": 2}
    out = results_of(spec)
    driver = spawn_driver(spec, tmp_path)
    try:
        assert wait_for(lambda: (out / "load" / "c1" / "window_0.json").exists(), 60), "window 1 was not measured"
        driver.kill()  # SIGKILL: no finally block, no failed/
        driver.wait()
    finally:
        kill_all(leftovers(standin))
    assert not (out / "failed").exists()
    launched_at = json.loads((out / "launch.json").read_text())["launched_at"]
    for output in ("runs", "load", "launch.json", "server.log"):  # what Snakemake deletes after the failure
        shutil.rmtree(out / output) if (out / output).is_dir() else (out / output).unlink()

    spec["configuration"]["env"] = {}  # the fault is gone: the rerun measures
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    [kept] = (out / "history").iterdir()
    assert kept.name == launched_at.replace("-", "").replace(":", "")
    assert sorted(p.name for p in (kept / "runs").iterdir()) == ["run_0.json", "run_1.json"]
    assert sorted(p.name for p in (kept / "load" / "c1").iterdir()) == ["window_0.json"]
    assert [r["tokens"] for r in json.loads((kept / "load" / "c1" / "window_0.json").read_text())["requests"]] == [
        16,
        16,
    ]
    assert json.loads((kept / "launch.json").read_text())["status"] == "ready"  # killed while measuring
    assert (kept / "server.log").stat().st_size > 0 and (kept / "measured_under.json").exists()
    assert "a session killed before it could keep its results" in progress
    assert not list(out.glob(".session*"))  # the new session's links are gone with it
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["run_0.json", "run_1.json"]  # measured again


def test_kill_9_of_the_bench_job_under_snakemake_keeps_run_1_for_the_rerun(tmp_path):
    """The whole path on the stand-in: Snakemake sees its job die and deletes the outputs; the rerun's onstart
    keeps the killed session's links (its run 1/3) in history/, and a secret the engine echoed stays hidden."""
    standin = executable_standin(tmp_path / "bin")
    (tmp_path / "model.gguf").write_bytes(b"GGUF stand-in")
    fault = tmp_path / "fault-on"
    fault.touch()
    secret = "SEKRETecho" + os.urandom(6).hex()
    configurations = {
        "baseline": {
            "baseline": True,
            "args": {"--alias": {"from_env": "ECHOED_REF"}},  # the stand-in logs its argv: the secret is in the log
            "env": {"STANDIN_MODE": "stall-mid-stream=3", "STANDIN_ONLY_IF": str(fault)},  # completion 3: run 2/3
        }
    }
    write_config(tmp_path, standin, tmp_path / "model.gguf", configurations, request_timeout_s=120)
    env = {**os.environ, "ECHOED_REF": secret, "SPECSWEEP_CACHE": str(tmp_path / "cache")}
    out = tmp_path / "results" / "baseline"
    try:  # killed during run 2/3, stalled
        returncode, said = kill_bench_job_after_run_0(tmp_path, env, 120)
    finally:
        kill_all(leftovers(standin))
    assert returncode != 0
    run_0 = json.loads((next(out.glob(".session*")) / "runs" / "run_0.json").read_text())
    assert not (out / "failed").exists() and not (out / "runs" / "run_0.json").exists(), said[-2000:]

    fault.unlink()
    try:
        again = snakemake(tmp_path, "all", env={"ECHOED_REF": secret})
    finally:
        kill_all(leftovers(standin))
    assert again.returncode == 0, again.stderr[-3000:]
    [kept] = (out / "history").iterdir()
    assert json.loads((kept / "runs" / "run_0.json").read_text()) == run_0
    assert json.loads((kept / "launch.json").read_text())["status"] == "ready"
    assert "a session killed before it could keep its results" in again.stderr
    log = (kept / "server.log").read_bytes()
    assert b"argv" in log and secret.encode() not in log  # the killed session never redacted its own log
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["run_0.json", "run_1.json", "run_2.json"]
