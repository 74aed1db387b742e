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


# A wait that lasts: said while it lasts, a bar on a terminal, plain lines elsewhere (issue 35 item 16).


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Tee:
    """jobs._Tee's shape: the console and the job's log."""

    def __init__(self, *streams: io.StringIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_the_wait_for_the_machine_is_said_again_while_it_lasts_and_costs_no_cpu(tmp_path, monkeypatch):
    """The lock-wait line was printed once and never again, however long the wait."""
    import fcntl
    import json
    import threading

    from specsweep.record import locks, ongoing

    monkeypatch.setattr(ongoing, "PLAIN_EVERY_S", 0.3)
    path = tmp_path / "locks" / "measure.lock"
    path.parent.mkdir(mode=0o700)
    path.write_text(json.dumps({"label": "other-sweep", "pid": 1, "host": "h", "cwd": "/", "since": time.time()}))
    path.chmod(0o600)
    held = open(path)  # noqa: SIM115 (released by the timer below)
    fcntl.flock(held, fcntl.LOCK_EX)
    threading.Timer(1.5, held.close).start()  # the other sweep ends
    out = io.StringIO()
    cpu = time.process_time()
    with locks.holding(path, "cfg", out):
        pass
    assert time.process_time() - cpu < 0.2  # the wait sleeps: no polling of the lock
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"cfg: waiting for exclusive use of the machine ({path}), held by other-sweep")
    again = lines[1:]
    assert 2 <= len(again) <= 5, lines  # every 0.3 s of the 1.5 s wait (fewer on a busy machine)
    for line in again:
        assert re.fullmatch(
            r"cfg: waiting for exclusive use of the machine: \d s so far; held by other-sweep .* for \d+ s", line
        ), line


def test_a_wait_of_counted_items_says_how_many_ended(monkeypatch):
    from specsweep.record import ongoing

    monkeypatch.setattr(ongoing, "PLAIN_EVERY_S", 0.2)
    out = io.StringIO()
    with ongoing.Ongoing("cfg: load c4 window 1/3", out, total=4) as wait:
        wait.advance()
        time.sleep(0.5)
    lines = out.getvalue().splitlines()
    assert lines and all(
        re.fullmatch(r"cfg: load c4 window 1/3: 1 of 4 requests ended, [01] s so far", x) for x in lines
    )


def test_on_a_terminal_a_bar_and_in_the_log_plain_lines(monkeypatch):
    from specsweep.record import ongoing

    monkeypatch.setattr(ongoing, "PLAIN_EVERY_S", 0.25)
    monkeypatch.setattr(ongoing, "BAR_EVERY_S", 0.05)
    console, log = Terminal(), io.StringIO()
    with ongoing.Ongoing("cfg: load c4 window 1/3", Tee(console, log), total=4) as wait:
        for _ in range(4):
            wait.advance()
        time.sleep(0.6)
    drawn = console.getvalue()
    assert "cfg: load c4 window 1/3" in drawn and "4/4" in drawn and "\r" in drawn  # tqdm's bar, redrawn
    assert "requests ended" not in drawn  # no plain lines under the bar
    lines = log.getvalue().splitlines()
    assert lines and all(
        re.fullmatch(r"cfg: load c4 window 1/3: 4 of 4 requests ended, [01] s so far", x) for x in lines
    )


# The session's events: one object says every line (measure/progress.SessionProgress).


def test_each_session_event_is_one_line_naming_the_configuration():
    from pathlib import Path
    from types import SimpleNamespace

    from specsweep.measure.progress import SessionProgress
    from specsweep.record.results import RateProbe

    out = io.StringIO()
    said = SessionProgress("ngram", out)
    said.launching("vllm", "http://127.0.0.1:8000")
    said.ready(12.345, 2)
    said.run_done("run 1/5", SimpleNamespace(decode_tokens_per_s=37.64, client=SimpleNamespace(ttft_s=0.0213)), "")
    said.run_done("run 2/5", SimpleNamespace(decode_tokens_per_s=40.0, client=SimpleNamespace(ttft_s=0.5)), "ETA 3 s")
    said.run_excluded("run 3/5", Path("runs/run_2.json"), "no token count")
    said.runs_done("5 runs (benchmark.runs; no adaptive repetitions)")
    request = SimpleNamespace(flagged="request 3: 12 tokens streamed, 13 counted")
    window = SimpleNamespace(steady=(1.0, 1.0), requests=[request, SimpleNamespace(flagged=None)])
    said.window_done("load c4 window 1/3", SimpleNamespace(**vars(window), output_tokens_per_s=99.95, duration_s=4.04))
    said.probe_done("rate search 2 req/s", RateProbe(2.0, "misses", "p99_ttft_ms 900 > 500", 8))
    said.rate_found(None, 0.5, 0.25)
    said.rate_found(1.5, 0.5, 0.25)
    said.failed(RuntimeError("the server died"))
    said.kept(Path("results/ngram/failed/t"))
    said.not_kept(OSError("disk full"))
    said.snakemake_stopped([12, 34])
    assert out.getvalue().splitlines() == [
        "ngram: launching vllm on http://127.0.0.1:8000",
        "ngram: ready after 12.3 s; 2 warmup request(s)",
        "ngram: run 1/5: 37.6 tok/s single-request decode rate (TTFT 21 ms)",
        "ngram: run 2/5: 40.0 tok/s single-request decode rate (TTFT 500 ms); ETA 3 s",
        "ngram: WARNING: run 3/5 is excluded from the statistics (kept in runs/run_2.json): no token count",
        "ngram: 5 runs (benchmark.runs; no adaptive repetitions)",
        "ngram: load c4 window 1/3: 100.0 tok/s end-to-end output rate, 2 requests in 4.0 s, steady 1.0-1.0 s"
        " (empty: more requests_per_window would give one); WARNING: 1 request(s) counted nowhere: "
        "request 3: 12 tokens streamed, 13 counted",
        "ngram: rate search 2 req/s: misses (p99_ttft_ms 900 > 500)",
        "ngram: SLO rate none (below 0.5), to 0.25 requests/s",
        "ngram: SLO rate 1.5 requests/s, to 0.25 requests/s",
        "ngram: FAILED (the server died)",
        "ngram: partial results kept in results/ngram/failed/t",
        "ngram: WARNING: could not keep all partial results (disk full)",
        "ngram: stopped this job's Snakemake (pid 12, 34) so that it deletes no output: they are the new attempt's",
    ]


def test_the_session_module_prints_nothing_itself():
    """Every line of a session goes through SessionProgress: a new event is a method there, not a print."""
    from pathlib import Path

    import specsweep.measure.claim
    import specsweep.measure.session

    for module in (specsweep.measure.session, specsweep.measure.claim):
        assert "print(" not in Path(module.__file__).read_text(), module.__name__
