"""A session's console lines: each event of a session (launch, ready, runs, windows, probes, failure) as a
method of one object, and the long waits (a server that is still loading, runs still to come).

A model that loads for minutes (the SGLang example allows 30) must not look like a hang, and a
session of many long runs should say when it will end.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from specsweep.measure import telemetry
from specsweep.record.ongoing import Ongoing, duration
from specsweep.record.rates import END_TO_END_OUTPUT, SINGLE_REQUEST_DECODE
from specsweep.record.results import RateProbe, Run, Window

WAITING_EVERY_S = 5.0


class ReadyWait:
    """Called with the seconds waited so far; prints a line every ``every_s`` while the server loads."""

    def __init__(
        self,
        name: str,
        timeout_s: float,
        progress: TextIO,
        last_log_line: Callable[[], str] | None = None,
        every_s: float = WAITING_EVERY_S,
    ) -> None:
        self.name, self.timeout_s, self.progress, self.every_s = name, timeout_s, progress, every_s
        self.last_log_line = last_log_line  # the server log's last line, shown with each progress line
        self.next_s = every_s

    def __call__(self, waited_s: float) -> None:
        if waited_s < self.next_s:
            return
        self.next_s = (waited_s // self.every_s + 1) * self.every_s
        line = (
            f"{self.name}: still waiting for the server to be ready: {waited_s:.0f} s of {self.timeout_s:.0f} s "
            f"(benchmark.ready_timeout_s)"
        )
        last = self.last_log_line() if self.last_log_line else None
        if last:
            line += f"; its log says: {last[:120]}"
        print(line, file=self.progress, flush=True)


def eta(done: int, total: int, elapsed_s: float, windows: tuple[int, float] = (0, 0.0)) -> str:
    """What is left of a session after ``done`` of ``total`` runs took ``elapsed_s``, at their mean pace, and
    the load windows still to come after them (``windows``: how many, their expected seconds)."""
    count, windows_s = windows
    if done >= total and not count:
        return ""
    per_run = elapsed_s / done
    runs_s = per_run * max(0, total - done)
    parts = [f"{total - done} run(s) left ({per_run:.1f} s each)"] if done < total else []
    if count:
        parts.append(f"{count} load window(s) (~{duration(windows_s)} at this pace)")
    return f"ETA {duration(runs_s + windows_s)} for the {' and the '.join(parts)}"


class SessionProgress:
    """What one session says on its console, one method per event (launch, ready, each run, window and probe,
    a failure and what was kept), so that every line of a session is written here and a live display can
    take the place of the console by overriding these methods. Each line starts with the configuration's name."""

    def __init__(self, name: str, stream: TextIO) -> None:
        self.name, self.stream = name, stream

    def _say(self, text: str) -> None:
        print(f"{self.name}: {text}", file=self.stream, flush=True)

    def warning(self, text: str) -> None:
        self._say(f"WARNING: {text}")

    def leftover_stopped(self, pgid: int) -> None:
        self._say(f"stopped a server left behind by an interrupted job (process group {pgid})")

    def launching(self, kind: str, base_url: str) -> None:
        self._say(f"launching {kind} on {base_url}")

    def ready_wait(self, timeout_s: float, last_log_line: Callable[[], str] | None = None) -> ReadyWait:
        """The waiting callback of ``wait_until_ready``: a line every few seconds while the server loads."""
        return ReadyWait(self.name, timeout_s, self.stream, last_log_line)

    def ready(self, ready_s: float, warmups: int) -> None:
        self._say(f"ready after {ready_s:.1f} s; {warmups} warmup request(s)")

    def watching(self, description: str) -> None:
        """What is sampled while the runs and windows are measured (telemetry.Watch.describe)."""
        self._say(description)

    def measured_under(self, label: str, sampled: dict[str, Any] | None) -> None:
        """Contention and clock slowdowns during a measurement, said as they happen (docs/energy.md)."""
        if reason := telemetry.contended((sampled or {}).get("contention")):
            self.warning(f"{label} was measured under contention: {reason}")
        if slowed := telemetry.slowdowns(sampled):
            self.warning(f"GPU clocks slowed down during {label}: {', '.join(slowed)}")

    def run_done(self, label: str, run: Run, pace: str) -> None:
        """One single-request run, with the session's ETA (``pace``, empty once the declared runs are done)."""
        self._say(
            f"{label}: {SINGLE_REQUEST_DECODE.quote(run.decode_tokens_per_s)} "
            f"(TTFT {1000 * run.client.ttft_s:.0f} ms){'; ' + pace if pace else ''}"
        )

    def run_excluded(self, label: str, kept_in: Path, reason: str) -> None:
        self.warning(f"{label} is excluded from the statistics (kept in {kept_in}): {reason}")

    def runs_done(self, stopped_because: str) -> None:
        self._say(stopped_because)

    def window(self, label: str, requests: int) -> Ongoing:
        """A window of ``requests`` while it lasts (a window may last minutes): ``with``, ``advance()`` per end."""
        return Ongoing(f"{self.name}: {label}", self.stream, total=requests)

    def window_done(self, label: str, window: Window) -> None:
        start, end = window.steady
        flagged = [r.flagged for r in window.requests if r.flagged]
        self._say(
            f"{label}: {END_TO_END_OUTPUT.quote(window.output_tokens_per_s)}, "
            f"{len(window.requests)} requests in {window.duration_s:.1f} s, steady {start:.1f}-{end:.1f} s"
            + ("" if end > start else " (empty: more requests_per_window would give one)")
            + (f"; WARNING: {len(flagged)} request(s) counted nowhere: {flagged[0]}" if flagged else "")
        )

    def probe_done(self, label: str, probe: RateProbe) -> None:
        self._say(f"{label}: {probe.verdict} ({probe.why})")

    def rate_found(self, found_rate: float | None, low: float, resolution: float) -> None:
        found = f"{found_rate:g} requests/s" if found_rate is not None else f"none (below {low:g})"
        self._say(f"SLO rate {found}, to {resolution:g} requests/s")

    def failed(self, error: BaseException) -> None:
        """The original error, whatever follows."""
        self._say(f"FAILED ({error})")

    def kept(self, folder: Path) -> None:
        self._say(f"partial results kept in {folder}")

    def not_kept(self, problem: OSError) -> None:
        self.warning(f"could not keep all partial results ({problem})")

    def not_recorded(self, launch: Path, problem: OSError) -> None:
        self.warning(f"could not record the failure in {launch} ({problem})")

    def snakemake_stopped(self, pids: list[int]) -> None:
        self._say(
            f"stopped this job's Snakemake (pid {', '.join(map(str, pids))}) so that it deletes no output: "
            f"they are the new attempt's"
        )

    def taken_over(self, why: str, finished: int, kept: Path, attempt: str) -> None:
        """The configuration's claim taken from an attempt that no longer runs (measure/claim.py)."""
        self._say(
            f"{why}; that attempt's evidence ({finished} finished run(s)) is kept in {kept}; "
            f"measuring {self.name} again here ({attempt})"
        )

    def node_failed(self, job: str, stopped: list[int]) -> None:
        """Slurm said NODE_FAIL of this job while it still measures (measure/claim.py)."""
        self._say(
            f"Slurm reports job {job} NODE_FAIL: stopped its batch script's Snakemake "
            f"(pid {', '.join(map(str, stopped)) or 'none found'}) so that it deletes no output a later attempt "
            f"writes; measuring on until a later attempt takes {self.name} over"
        )
