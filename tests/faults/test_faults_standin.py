"""Faults a real engine cannot be made to show on demand, injected with the stand-in engine.

Each case asserts what the user sees (exception and message), which files exist afterwards, and
that no process of the engine is left (process-table walk in the ``standin`` fixture teardown and here).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import pytest
from conftest import (
    failed_dirs,
    launch_status,
    leftovers,
    results_of,
    run_session,
    session_spec,
    spawn_driver,
    wait_for,
)

from specsweep.engines.server import ServerError
from specsweep.measure.client import RequestError
from specsweep.measure.session import RunError


def test_clean_session_with_forked_worker_and_ignored_sigterm_leaves_nothing(
    tmp_path, standin, model_file, monkeypatch
):
    # The worker ignores SIGTERM and the leader too: only the escalation to SIGKILL stops them.
    spec = session_spec(tmp_path, standin, model_file, env={"STANDIN_MODE": "fork-worker,ignore-sigterm"})
    started = time.monotonic()
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    assert time.monotonic() - started < 10
    assert sorted(p.name for p in (results_of(spec) / "runs").iterdir()) == ["run_0.json", "run_1.json", "run_2.json"]
    assert launch_status(spec) == "completed"
    assert not (results_of(spec) / "server.pgid").exists()
    assert failed_dirs(spec) == []
    assert leftovers(standin) == []


def test_engine_exiting_at_start_fails_at_once_with_the_log_tail(tmp_path, standin, model_file, monkeypatch):
    spec = session_spec(tmp_path, standin, model_file, env={"STANDIN_MODE": "exit-at-start"}, ready_timeout_s=60)
    started = time.monotonic()
    error, progress = run_session(spec, monkeypatch)
    assert time.monotonic() - started < 5  # not the 60 s readiness timeout
    assert isinstance(error, ServerError)
    assert "exited with status 1 before it was ready" in str(error)
    assert "failed to load model (exit-at-start)" in str(error)  # the server's own last log lines
    kept = failed_dirs(spec)
    assert len(kept) == 1 and {p.name for p in kept[0].iterdir()} >= {"server.log", "launch.json", "error.txt"}
    assert json.loads((kept[0] / "launch.json").read_text())["status"] == "failed"
    assert "partial results kept in" in progress
    assert leftovers(standin) == []


def test_readiness_timeout_fires_and_stops_the_hung_server(tmp_path, standin, model_file, monkeypatch):
    spec = session_spec(
        tmp_path, standin, model_file, env={"STANDIN_MODE": "hang-before-ready,fork-worker"}, ready_timeout_s=1.5
    )
    started = time.monotonic()
    error, _ = run_session(spec, monkeypatch)
    assert isinstance(error, ServerError)
    assert "not ready after 2 s (benchmark.ready_timeout_s)" in str(error)
    assert time.monotonic() - started < 6
    assert leftovers(standin) == []


@pytest.mark.parametrize(
    ("mode", "kind", "expected"),
    [
        ("stall-mid-stream", RequestError, "timed out"),
        ("drop-connection", RunError, "stream ended after 3 events without the engine's final report"),
    ],
)
def test_request_that_stalls_or_drops_fails_the_run(tmp_path, standin, model_file, monkeypatch, mode, kind, expected):
    spec = session_spec(
        tmp_path, standin, model_file, env={"STANDIN_MODE": mode}, warmup_requests=0, request_timeout_s=1
    )
    started = time.monotonic()
    error, _ = run_session(spec, monkeypatch)
    assert isinstance(error, kind), error
    assert expected in str(error)
    assert time.monotonic() - started < 6
    assert not (results_of(spec) / "runs").exists()
    assert len(failed_dirs(spec)) == 1
    assert leftovers(standin) == []


def test_engine_killed_during_run_3_of_5_keeps_the_completed_runs(tmp_path, standin, model_file, monkeypatch):
    # Completion 4 = warmup + runs 1-2 + run 3: the engine SIGKILLs itself half-way through run 3.
    spec = session_spec(tmp_path, standin, model_file, env={"STANDIN_MODE": "die-during=4"}, runs=5)
    error, progress = run_session(spec, monkeypatch)
    assert isinstance(error, ServerError)
    assert "the server died during run 3/5 (2 completed) with signal SIGKILL" in str(error)
    assert "dying with SIGKILL mid-request" in str(error)  # log tail
    kept = failed_dirs(spec)
    assert len(kept) == 1
    assert sorted(p.name for p in (kept[0] / "runs").iterdir()) == ["run_0.json", "run_1.json"]
    assert "dying with SIGKILL" in (kept[0] / "server.log").read_text()
    assert json.loads((kept[0] / "launch.json").read_text())["status"] == "failed"
    assert str(kept[0]) in progress
    assert leftovers(standin) == []


def _listening_standin(standin, port, tmp_path, env_mode=""):
    """Someone else's server (not launched by specsweep) answering /health on ``port``."""
    started = tmp_path / f"other-{port}.started"
    other = subprocess.Popen(
        [str(standin), "--port", str(port)],
        start_new_session=True,
        env={"STANDIN_STARTED": str(started), "STANDIN_MODE": env_mode},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert wait_for(started.exists, 10), "the other server did not start"
    return other


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_port_taken_by_someone_else_is_refused_before_launch(tmp_path, standin, model_file, monkeypatch):
    port = _free_port()
    other = _listening_standin(standin, port, tmp_path)
    try:
        spec = session_spec(tmp_path, standin, model_file, port=port)
        error, _ = run_session(spec, monkeypatch)
        assert isinstance(error, ServerError)
        assert f"127.0.0.1:{port} is already in use by pid {other.pid}" in str(error)
        assert "engines/llama/port: 0" in str(error)
        assert not (results_of(spec) / "launch.json").exists()  # nothing was launched
        assert other.poll() is None  # and someone else's server was not touched
    finally:
        other.kill()
        other.wait()


def test_readiness_is_not_fooled_by_a_stale_server_on_the_same_port(tmp_path, standin, model_file):
    # Ours binds late (as a loading engine may) and then fails: the stale one answers 200 meanwhile.
    from specsweep.engines.base import EngineResources
    from specsweep.engines.llamacpp import LlamaCpp
    from specsweep.engines.server import StaleGroup, managed_server, wait_until_ready

    port = _free_port()
    other = _listening_standin(standin, port, tmp_path)
    engine = LlamaCpp({}, EngineResources(str(standin), str(model_file)))
    log = tmp_path / "server.log"
    try:
        assert engine.is_ready(f"http://127.0.0.1:{port}")  # the stale server does answer
        with (
            pytest.raises(ServerError) as error,
            managed_server(
                [str(standin), "--port", str(port)],
                {"STANDIN_MODE": "slow-bind=1"},
                log,
                StaleGroup(tmp_path / "server.pgid"),
                0.5,
            ) as process,
        ):
            wait_until_ready(process, lambda: engine.is_ready(f"http://127.0.0.1:{port}"), 10, log, port=port)
        assert "couldn't bind" in str(error.value)
    finally:
        other.kill()
        other.wait()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("phase", ["readiness", "run"])
def test_signal_to_the_job_script_stops_the_engine_group(tmp_path, standin, model_file, sig, phase):
    mode = "hang-before-ready" if phase == "readiness" else "stall-mid-stream"
    spec = session_spec(
        tmp_path,
        standin,
        model_file,
        env={"STANDIN_MODE": f"{mode},fork-worker,ignore-sigterm"},
        warmup_requests=0,
        request_timeout_s=60,
        ready_timeout_s=60,
    )
    driver = spawn_driver(spec, tmp_path)
    log = results_of(spec) / "server.log"
    marker = "stalling mid-stream" if phase == "run" else "listening on"
    assert wait_for(lambda: log.exists() and marker in log.read_text(), 15), driver.stdout
    assert len(leftovers(standin)) == 2  # leader + worker, both running
    driver.send_signal(sig)
    sent = time.monotonic()
    assert wait_for(lambda: not leftovers(standin), 10), "engine processes left 10 s after the signal"
    stopped_s = time.monotonic() - sent
    output, _ = driver.communicate(timeout=10)
    assert driver.returncode != 0
    assert "FAILED" in output and "partial results kept in" in output
    assert ("KeyboardInterrupt" if sig == signal.SIGINT else "received SIGTERM") in output
    assert launch_status(spec) == "failed"
    assert not (results_of(spec) / "server.pgid").exists()
    assert len(failed_dirs(spec)) == 1
    print(f"{sig.name} during {phase}: engine group gone {stopped_s:.2f} s after the signal")


def test_sigkill_of_the_job_script_is_cleaned_up_by_the_next_session(tmp_path, standin, model_file, monkeypatch):
    spec = session_spec(
        tmp_path, standin, model_file, env={"STANDIN_MODE": "fork-worker,ignore-sigterm"}, warmup_requests=0
    )
    spec["configuration"]["env"]["STANDIN_MODE"] += ",hang-before-ready"
    driver = spawn_driver(spec, tmp_path)
    pgid_file = results_of(spec) / "server.pgid"
    assert wait_for(lambda: pgid_file.exists() and len(leftovers(standin)) == 2, 15)
    driver.kill()  # like the OOM killer: no finally block runs
    driver.wait()
    time.sleep(0.5)
    orphans = leftovers(standin)
    assert len(orphans) == 2, "the fault did not happen: PDEATHSIG alone stopped the group"
    recorded = json.loads(pgid_file.read_text())["pgid"]
    assert {p.pid for p in orphans} >= {recorded}

    spec["configuration"]["env"]["STANDIN_MODE"] = ""  # the rerun, with a healthy engine
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    assert f"stopped a server left behind by an interrupted job (process group {recorded})" in progress
    assert launch_status(spec) == "completed"
    assert leftovers(standin) == []


def test_stale_record_of_a_reused_process_group_is_not_killed(tmp_path):
    # The recorded pgid now belongs to an unrelated process (started before the record): leave it alone.
    from specsweep.engines.server import StaleGroup

    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        record = tmp_path / "server.pgid"
        record.write_text(json.dumps({"pgid": bystander.pid, "executable": sys.executable, "started": time.time() + 5}))
        assert StaleGroup(record).stop_if_running(0.5) is None
        assert bystander.poll() is None
        assert not record.exists()
    finally:
        bystander.kill()
        bystander.wait()


def test_malformed_stream_events_and_metrics_lines_are_counted_not_fatal(tmp_path, standin, model_file, monkeypatch):
    # Every token event is preceded by two bad `data:` lines; /metrics carries a garbled sample line.
    spec = session_spec(tmp_path, standin, model_file, env={"STANDIN_MODE": "bad-json"})
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    run = json.loads((results_of(spec) / "runs" / "run_0.json").read_text())
    assert run["malformed_events"] >= 2 * run["tokens"]
    assert run["tokens"] == spec["benchmark"]["max_tokens"]
    assert leftovers(standin) == []
