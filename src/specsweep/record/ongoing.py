"""A long wait shown while it lasts: a tqdm bar where a terminal is attached, a plain line now and then elsewhere.

The caller blocks in the wait itself (flock, a load window's request threads); one daemon thread wakes on a
timer to redraw, so nothing polls what is awaited and the client stays one light process. tqdm is imported
only for a terminal: a job whose progress goes to a log alone never loads it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

PLAIN_EVERY_S = 10.0  # a plain line this often: a 109 s load window says ten times that it is alive
BAR_EVERY_S = 1.0  # a bar's clock redraws this often (tqdm redraws only when told)


def split_terminal(progress: TextIO) -> tuple[TextIO | None, list[TextIO]]:
    """The stream of ``progress`` that a terminal shows (None if none) and the others (a log file): progress may
    tee to several streams (jobs._Tee's ``streams``)."""
    streams = list(getattr(progress, "streams", [progress]))
    terminal = next((s for s in streams if getattr(s, "isatty", lambda: False)()), None)
    return terminal, [s for s in streams if s is not terminal]


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Ongoing:
    """``with Ongoing(label, progress, total=n) as ongoing:`` around a blocking wait, ``ongoing.advance()`` as
    each of the ``total`` items ends (from any thread). ``status`` says what is known now (who holds a lock)."""

    def __init__(
        self,
        label: str,
        progress: TextIO,
        *,
        total: int | None = None,
        unit: str = "request",
        status: Callable[[], str] | None = None,
    ) -> None:
        self.label, self.total, self.unit, self.status = label, total, unit, status
        self.terminal, self.plain = split_terminal(progress)
        self.done = 0
        self.started = time.monotonic()
        self._bar: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name=f"progress: {label}", daemon=True)

    def __enter__(self) -> Ongoing:
        self.started = time.monotonic()
        if self.terminal is not None:
            from tqdm import tqdm

            self._bar = tqdm(
                total=self.total,
                desc=self.label,
                unit=self.unit,
                file=self.terminal,
                leave=False,  # the caller's own line says how it ended
                dynamic_ncols=True,
                bar_format=None if self.total else "{desc}: {elapsed}{postfix}",
            )
        self._thread.start()
        return self

    def advance(self) -> None:
        with self._lock:
            self.done += 1
            if self._bar is not None:
                self._bar.update(1)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        if self._bar is not None:
            self._bar.close()

    def line(self) -> str:
        """What the wait has come to, as one plain line."""
        so_far = f"{duration(time.monotonic() - self.started)} so far"
        done = f"{self.done} of {self.total} {self.unit}s ended, " if self.total is not None else ""
        return f"{self.label}: {done}{so_far}" + (f"; {self.status()}" if self.status else "")

    def _tick(self) -> None:
        plain_every = PLAIN_EVERY_S  # read when the wait starts, so a test can shorten it
        next_plain = plain_every
        while not self._stop.wait(BAR_EVERY_S if self._bar is not None else plain_every):
            with self._lock:
                if self._bar is not None:
                    if self.status:
                        self._bar.set_postfix_str(self.status(), refresh=False)
                    self._bar.refresh()
                if time.monotonic() - self.started < next_plain:
                    continue
                next_plain += plain_every
                text = self.line() + "\n"
                for stream in self.plain:
                    stream.write(text)
                    stream.flush()
