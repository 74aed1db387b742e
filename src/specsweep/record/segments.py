"""Which request a server-log line belongs to, by its byte offset in the log.

The session records where in ``server.log`` each warmup request, each measured run and each load
window starts (launch.json ``log_segments``: the log's size just before the request is sent) and where
the teardown starts. A line belongs to the last segment that started at or before its offset: lines
an engine prints late about a request (timings after the last streamed token) still fall before
the next request's start. Counting matches instead (``skip_first``) cannot place lines whose
number per request varies, such as one line per draft/verify cycle.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, NamedTuple

# LOAD: a load window measured after the single-request runs (index: the window, level: its load level's
# label); sessions before per-window segments recorded one LOAD segment for all windows (no index, no level).
STARTUP, WARMUP, RUN, LOAD, TEARDOWN = "startup", "warmup", "run", "load", "teardown"
# The profile.csv columns a located row gets beside ``phase`` (PLACE_COLUMNS), one home for their meaning.
PLACE_COLUMNS = ("run", "load_level", "load_window")


def segment(phase: str, index: int | None, start: int, level: str | None = None) -> dict[str, Any]:
    """One launch.json ``log_segments`` entry (``level``: a load window's level label)."""
    return {"phase": phase, "index": index, "start": start, **({"level": level} if level is not None else {})}


class Place(NamedTuple):
    """The segment a log line falls in: its phase, the warmup/run/window index, a load window's level."""

    phase: str
    index: int | None = None
    level: str | None = None

    def columns(self) -> dict[str, Any]:
        """``phase`` and PLACE_COLUMNS of a profile.csv row: the run index of a run row, a load row's level
        and window; empty elsewhere."""
        load = self.phase == LOAD
        return {
            "phase": self.phase,
            "run": self.index if self.phase == RUN else None,
            "load_level": self.level if load else None,
            "load_window": self.index if load else None,
        }


@dataclass(frozen=True)
class Segments:
    starts: tuple[int, ...]
    places: tuple[Place, ...]

    @classmethod
    def of(cls, entries: Sequence[Mapping[str, Any]]) -> Segments:
        ordered = sorted(entries, key=lambda e: e["start"])
        return cls(
            starts=tuple(int(e["start"]) for e in ordered),
            places=tuple(Place(e["phase"], e.get("index"), e.get("level")) for e in ordered),
        )

    @classmethod
    def from_launch(cls, launch: Mapping[str, Any] | None) -> Segments | None:
        """The segments a session recorded; None for launches recorded before offsets were."""
        entries = (launch or {}).get("log_segments")
        return cls.of(entries) if entries else None

    def locate(self, offset: int) -> Place:
        """The segment of the line starting at byte ``offset``."""
        position = bisect.bisect_right(self.starts, offset) - 1
        return Place(STARTUP) if position < 0 else self.places[position]


class LogLine(str):
    """A line of a log as text, carrying the byte offset where it starts in the file (``start``)."""

    start: int

    def __new__(cls, text: str, start: int) -> LogLine:
        line = super().__new__(cls, text)
        line.start = start
        return line


def lines_with_offsets(handle: BinaryIO) -> Iterator[LogLine]:
    """The lines of a log opened in binary mode, decoded as text mode reads them, each with its offset."""
    start = 0
    for raw in handle:
        text = raw.decode("utf-8", errors="replace")
        yield LogLine(text[:-2] + "\n" if text.endswith("\r\n") else text, start)
        start += len(raw)
