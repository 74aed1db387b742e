"""Process tracking (misuse): what a launch started is stopped even when it left the server's process group
(a wrapper executable that runs ``setsid helper &``), and a stale ``server.pgid`` record stops exactly the
processes it recorded, never an unrelated group whose command line merely shares a word."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from conftest import kill_all, leftovers, results_of, run_session, session_spec, spawn_driver, wait_for

from specsweep.engines.server import StaleGroup


def _wrapper(tmp_path, standin, marker: str):
    """An engine executable that is a wrapper: it starts a helper in a session of its own, then the server."""
    wrapper = tmp_path / "bin" / "wrapped-server"
    helper = f"import time; time.sleep(600)  # {marker}"
    wrapper.write_text(f"#!/bin/sh\nsetsid {sys.executable} -c '{helper}' &\nexec {standin} \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper


def test_a_helper_that_left_the_process_group_is_stopped_with_the_server(tmp_path, standin, model_file, monkeypatch):
    marker = f"helper-{os.urandom(6).hex()}"
    wrapper = _wrapper(tmp_path, standin, marker)
    try:
        error, progress = run_session(session_spec(tmp_path, wrapper, model_file, runs=1), monkeypatch)
        assert error is None, progress
        assert wait_for(lambda: not leftovers(marker), 5), "the setsid helper survived the session"
    finally:
        kill_all(leftovers(marker))


def test_a_stale_record_stops_what_it_recorded_including_a_helper(tmp_path, standin, model_file):
    marker = f"helper-{os.urandom(6).hex()}"
    wrapper = _wrapper(tmp_path, standin, marker)
    spec = session_spec(
        tmp_path,
        wrapper,
        model_file,
        env={"STANDIN_MODE": "ignore-sigterm"},
        warmup_requests=0,
        runs=1,
        request_timeout_s=60,
    )
    spec["configuration"]["env"]["STANDIN_MODE"] += ",stall-mid-stream"
    driver = spawn_driver(spec, tmp_path)
    record = results_of(spec) / "server.pgid"
    try:
        assert wait_for(lambda: record.exists() and json.loads(record.read_text())["processes"], 20)
        driver.kill()  # no finally block runs; the server ignores the PDEATHSIG TERM
        driver.wait()
        time.sleep(0.3)
        assert leftovers(marker) and leftovers(standin)
        assert StaleGroup(record).stop_if_running(0.5) is not None
        assert wait_for(lambda: not leftovers(marker) and not leftovers(standin), 5)
    finally:
        kill_all(leftovers(marker))


def test_a_stale_record_never_stops_an_unrelated_group_that_shares_a_word(tmp_path):
    # An unrelated process group whose command line holds the recorded executable's name (python3).
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        record = tmp_path / "server.pgid"
        record.write_text(
            json.dumps(
                {
                    "pgid": other.pid,
                    "executable": os.path.basename(sys.executable),
                    "leader_created": time.time() - 3600,
                    "started": time.time() - 3600,
                    "processes": [[other.pid, time.time() - 3600]],
                }
            )
        )
        assert StaleGroup(record).stop_if_running(0.5) is None
        assert other.poll() is None, "an unrelated process group was stopped"
        # the record of the old format (no creation times) is not trusted either
        record.write_text(json.dumps({"pgid": other.pid, "executable": sys.executable, "started": 0}))
        assert StaleGroup(record).stop_if_running(0.5) is None and other.poll() is None
    finally:
        other.kill()
        other.wait()
