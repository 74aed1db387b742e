"""A cancelled or timed-out Slurm job signals every process of its step, and Snakemake on the node then
signals its job again: SIGTERMs keep arriving while the session stops its engine and keeps its evidence.
The first one stops the session; the later ones must not cut the post-mortem short."""

from __future__ import annotations

import contextlib
import json
import signal
import time

from conftest import failed_dirs, launch_status, leftovers, results_of, session_spec, spawn_driver, wait_for


def test_sigterm_after_sigterm_still_keeps_the_evidence(tmp_path, standin, model_file):
    spec = session_spec(
        tmp_path,
        standin,
        model_file,
        env={"STANDIN_MODE": "hang-before-ready,fork-worker"},
        warmup_requests=0,
        ready_timeout_s=60,
    )
    driver = spawn_driver(spec, tmp_path)
    log = results_of(spec) / "server.log"
    assert wait_for(lambda: log.exists() and "listening on" in log.read_text(), 15)
    deadline = time.monotonic() + 3
    while driver.poll() is None and time.monotonic() < deadline:  # a signal every 10 ms until it exits
        with contextlib.suppress(ProcessLookupError):
            driver.send_signal(signal.SIGTERM)
        time.sleep(0.01)
    output, _ = driver.communicate(timeout=10)
    assert driver.returncode != 0, output
    assert "FAILED (received SIGTERM)" in output and "partial results kept in" in output
    kept = failed_dirs(spec)
    assert len(kept) == 1 and (kept[0] / "error.txt").exists() and (kept[0] / "launch.json").exists()
    assert launch_status(spec) == "failed"
    assert wait_for(lambda: not leftovers(standin), 10)


def test_outputs_deleted_while_the_session_stops_are_still_kept(tmp_path, standin, model_file):
    """Under Slurm, Snakemake on the node removes a cancelled job's outputs (launch.json, server.log) while
    the session is still stopping its engine: the evidence must survive that."""
    spec = session_spec(
        tmp_path,
        standin,
        model_file,
        env={"STANDIN_MODE": "stall-mid-stream,ignore-sigterm"},  # teardown waits for the KILL
        warmup_requests=0,
        request_timeout_s=60,
        stop_grace_s=1,
    )
    driver = spawn_driver(spec, tmp_path)
    log = results_of(spec) / "server.log"
    assert wait_for(lambda: log.exists() and "stalling mid-stream" in log.read_text(), 15)
    driver.send_signal(signal.SIGTERM)
    for output in (log, results_of(spec) / "launch.json"):
        output.unlink()  # what Snakemake does to a failed job's outputs
    output, _ = driver.communicate(timeout=20)
    assert "FAILED (received SIGTERM)" in output and "partial results kept in" in output
    (kept,) = failed_dirs(spec)
    assert "stalling mid-stream" in (kept / "server.log").read_text()
    assert json.loads((kept / "launch.json").read_text())["status"] == "failed"
    assert not list(results_of(spec).glob(".session*"))  # the links (one folder per attempt) are gone once it ends
    assert wait_for(lambda: not leftovers(standin), 10)
