"""Console lines for the long waits of a session: a server that is still loading, runs still to come.

A model that loads for minutes (the SGLang example allows 30) must not look like a hang, and a
session of many long runs should say when it will end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from specsweep.record.ongoing import duration

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
