"""Load windows when the engine misbehaves (stand-in engine): nothing measured is lost, errors say why."""

from __future__ import annotations

import json

from conftest import failed_dirs, leftovers, run_session, session_spec

from specsweep.engines.server import ServerError
from specsweep.measure.session import RunError

LOAD = {"requests_per_window": 2, "windows": 2, "seed": 1, "slo": {}}


def test_engine_killed_in_the_second_window_keeps_the_runs_and_the_first_window(
    tmp_path, standin, model_file, monkeypatch
):
    # Completions: warmup 1, runs 2-3, window 1: 4-5, window 2: 6-7; the engine dies half-way through 6.
    spec = session_spec(
        tmp_path, standin, model_file, env={"STANDIN_MODE": "die-during=6"}, runs=2, load={**LOAD, "concurrency": [1]}
    )
    spec["windows"] = {"c1": 2}
    error, progress = run_session(spec, monkeypatch)
    assert isinstance(error, ServerError)
    assert "the server died during load c1 window 2/2" in str(error)
    (kept,) = failed_dirs(spec)
    assert sorted(p.name for p in (kept / "runs").iterdir()) == ["run_0.json", "run_1.json"]
    assert sorted(p.name for p in (kept / "load" / "c1").iterdir()) == ["window_0.json"]
    window = json.loads((kept / "load" / "c1" / "window_0.json").read_text())
    assert [r["tokens"] for r in window["requests"]] == [16, 16]
    assert "c1 window 1/2" in progress
    assert leftovers(standin) == []


def test_fewer_slots_than_the_concurrency_fail_before_the_first_window(tmp_path, standin, model_file, monkeypatch):
    # The stand-in reports total_slots 1 in /props (as llama-server with -np unset may choose for itself).
    spec = session_spec(tmp_path, standin, model_file, runs=1, load={**LOAD, "concurrency": [2]})
    spec["windows"] = {"c2": 2}
    error, _ = run_session(spec, monkeypatch)
    assert isinstance(error, RunError)
    assert "the server has 1 slot(s) (/props total_slots) but benchmark.load.concurrency asks for 2" in str(error)
    (kept,) = failed_dirs(spec)
    assert (kept / "runs" / "run_0.json").exists() and not (kept / "load").exists()
    assert leftovers(standin) == []
