"""A cancelled or timed-out Slurm job signals every process of its step, and Snakemake on the node then
signals its job again: SIGTERMs keep arriving while the session stops its engine and keeps its evidence.
The first one stops the session; the later ones must not cut the post-mortem short."""

from __future__ import annotations

import contextlib
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
    assert "FAILED (received SIGTERM); partial results kept in" in output
    kept = failed_dirs(spec)
    assert len(kept) == 1 and (kept[0] / "error.txt").exists() and (kept[0] / "launch.json").exists()
    assert launch_status(spec) == "failed"
    assert wait_for(lambda: not leftovers(standin), 10)
