"""Faults on the real llama-server (small token counts; the machine-wide measuring lock is taken)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from conftest import (
    TIMES,
    failed_dirs,
    launch_status,
    leftovers,
    results_of,
    run_session,
    session_spec,
    spawn_driver,
    wait_for,
)
from support import RealEngine

from specsweep.engines.server import ServerError
from specsweep.record.cache import cache_root

pytestmark = pytest.mark.engine
ARGS = {"-c": 1024, "-np": 1, "-t": 1, "--metrics": True}


@pytest.fixture
def model(tmp_path: Path, real_engine: RealEngine) -> Path:
    """The model, linked under tmp_path so the process walk tells our servers from other developers'."""
    link = tmp_path / "model.gguf"
    link.symlink_to(real_engine.model)
    yield link
    left = leftovers(tmp_path)
    for process in left:
        process.kill()
    assert not left, f"llama-server processes left behind: {[p.pid for p in left]}"


def _spec(tmp_path: Path, model: Path, **overrides):
    spec = session_spec(
        tmp_path, RealEngine.planned().server, model, args={**ARGS, **overrides.pop("args", {})}, **overrides
    )
    spec["cache"] = str(cache_root())  # the real machine-wide lock: other jobs may be measuring
    return spec


def test_bad_flag_fails_within_seconds_with_the_log_tail(tmp_path, model, monkeypatch):
    spec = _spec(tmp_path, model, args={"--no-such-flag": 3}, ready_timeout_s=120)
    error, _ = run_session(spec, monkeypatch)
    assert isinstance(error, ServerError)
    assert time.monotonic() - TIMES["launching"] < 15  # not the 120 s readiness timeout
    assert "exited with status 1 before it was ready" in str(error)
    assert "--no-such-flag" in str(error)  # llama-server's own complaint, from the log tail
    assert len(failed_dirs(spec)) == 1
    assert leftovers(tmp_path) == []


def test_missing_model_fails_within_seconds_with_the_log_tail(tmp_path, model, monkeypatch):
    model.unlink()  # vanished after the configuration was checked
    spec = _spec(tmp_path, tmp_path / "model.gguf", ready_timeout_s=120)
    error, _ = run_session(spec, monkeypatch)
    assert isinstance(error, ServerError)
    assert time.monotonic() - TIMES["launching"] < 15  # not the 120 s readiness timeout
    assert "before it was ready" in str(error) and "model.gguf" in str(error)
    assert leftovers(tmp_path) == []


def test_sigkill_of_the_engine_during_run_3_of_5(tmp_path, model, monkeypatch):
    spec = _spec(tmp_path, model, runs=5, max_tokens=48)
    killed = threading.Event()

    def kill_soon():
        time.sleep(0.2)  # run 3 has started: cache flush, counters, then the request
        pgid = json.loads((results_of(spec) / "server.pgid").read_text())["pgid"]
        os.killpg(pgid, signal.SIGKILL)
        killed.set()

    class Watch(list):
        def write(self, text):
            if "run 2/5:" in text:
                threading.Thread(target=kill_soon, daemon=True).start()
            return len(text)

        def flush(self):
            pass

    import drive_session

    monkeypatch.setenv("SPECSWEEP_CACHE", spec["cache"])
    with pytest.raises(ServerError) as error:
        drive_session.drive(spec, Watch())
    assert killed.is_set()
    assert "the server died during run 3/5 (2 completed) with signal SIGKILL" in str(error.value)
    kept = failed_dirs(spec)
    assert len(kept) == 1
    assert sorted(p.name for p in (kept[0] / "runs").iterdir()) == ["run_0.json", "run_1.json"]
    assert (kept[0] / "server.log").stat().st_size > 0 and (kept[0] / "launch.json").exists()
    assert leftovers(tmp_path) == []


def test_sigterm_to_the_job_mid_request_stops_llama_server(tmp_path, model):
    # llama-server ignores one SIGTERM while a request is in flight: the second one stops it.
    spec = _spec(tmp_path, model, warmup_requests=0, runs=1, max_tokens=900, stop_grace_s=2)
    driver = spawn_driver(spec, tmp_path)
    assert wait_for(lambda: launch_status(spec) == "ready", 120), "llama-server did not get ready"
    time.sleep(1.0)  # the first run's request is in flight
    assert launch_status(spec) == "ready" and leftovers(tmp_path)
    driver.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    assert wait_for(lambda: not leftovers(tmp_path), 10), "llama-server still running 10 s after SIGTERM"
    stopped_s = time.monotonic() - sent
    output, _ = driver.communicate(timeout=10)
    assert driver.returncode != 0 and "received SIGTERM" in output
    log = (failed_dirs(spec)[0] / "server.log").read_text()
    # Either the closed client connection cancelled the request and one TERM sufficed, or the
    # server hung in clean-up and the second TERM stopped it: both within the 10 s.
    assert "cleaning up before exit" in log or "Received second interrupt" in log
    assert launch_status(spec) == "failed"
    print(f"SIGTERM mid-request: llama-server group gone after {stopped_s:.2f} s")
