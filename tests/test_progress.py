"""Progress lines: a server still loading says so every few seconds; runs say when the session ends."""

from __future__ import annotations

import io
import re
import subprocess
import time

from specsweep.engines.server import wait_until_ready
from specsweep.measure.progress import ReadyWait, duration, eta


def test_a_loading_server_gets_a_line_every_few_seconds(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("loading model\nload_tensors: 40 % done\n")
    out = io.StringIO()
    ready_at = time.monotonic() + 1.3
    process = subprocess.Popen(["sleep", "30"])
    try:
        waited = wait_until_ready(
            process,
            lambda: time.monotonic() > ready_at,
            10,
            log,
            waiting=ReadyWait("cfg", 10, out, lambda: log.read_text().splitlines()[-1], every_s=0.5),
        )
    finally:
        process.kill()
        process.wait()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and waited >= 1.3  # at 0.5 s and 1.0 s
    for line in lines:
        assert re.fullmatch(
            r"cfg: still waiting for the server to be ready: [01] s of 10 s "
            r"\(benchmark.ready_timeout_s\); its log says: load_tensors: 40 % done",
            line,
        )


def test_a_long_wait_is_reported_once_per_interval_not_per_poll():
    out = io.StringIO()
    wait = ReadyWait("cfg", 1800, out)
    for tenth in range(0, 200):  # 20 s of polls, 10 a second
        wait(tenth / 10)
    assert len(out.getvalue().splitlines()) == 3  # at 5, 10, 15 s


def test_eta_from_the_runs_so_far():
    assert eta(2, 5, 20.0) == "ETA 30 s for the 3 run(s) left (10.0 s each)"
    assert eta(1, 10, 130.0) == "ETA 19 min 30 s for the 9 run(s) left (130.0 s each)"
    assert eta(5, 5, 50.0) == ""
    assert duration(3725) == "1 h 02 min"


def test_the_run_eta_counts_the_load_windows_still_to_come():
    """The run ETA ignored the windows after the runs (a 109 s window among them) (issue 35, item 16)."""
    assert eta(2, 5, 20.0, (4, 90.0)) == (
        "ETA 2 min 00 s for the 3 run(s) left (10.0 s each) and the 4 load window(s) (~1 min 30 s at this pace)"
    )
    assert eta(5, 5, 50.0, (4, 90.0)) == "ETA 1 min 30 s for the 4 load window(s) (~1 min 30 s at this pace)"


def test_the_windows_left_come_from_the_sessions_own_pace():
    from specsweep.plan.walltime import load_windows_left

    benchmark = {
        "max_tokens": 16,
        "load": {"concurrency": [1, 4], "requests_per_window": 8, "windows": 3, "warmup": True},
    }
    count, seconds = load_windows_left(benchmark, 2.0)
    assert count == 2 * (3 + 1)  # each level's measured windows and its warmup window
    assert seconds > 4 * 8 * 2.0  # c1: every request alone, 2 s each, four windows
    assert load_windows_left({"max_tokens": 16}, 2.0) == (0, 0)
