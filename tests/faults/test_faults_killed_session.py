"""A measuring job killed outright (``kill -9``, the OOM killer, a node agent) runs no ``finally``: nothing
writes ``failed/`` and Snakemake deletes its outputs. Its completed runs and load windows survive as the links
in ``results/<cfg>/.session/``, and the next session keeps them in ``history/`` before it measures."""

from __future__ import annotations

import json
import shutil

from conftest import kill_all, leftovers, results_of, run_session, session_spec, spawn_driver, wait_for

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
    assert not (out / ".session").exists()  # the new session's links are gone with it
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["run_0.json", "run_1.json"]  # measured again
