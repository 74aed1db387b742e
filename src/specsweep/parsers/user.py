"""User-defined profile parsers: named regexes whose named groups become profile.csv columns.

Configured under ``profile_parsers`` (config/README.md), e.g. for a patched SGLang that prints
``EAGLE3_PROFILE cycle=812 draft_ms=0.61 verify_ms=18.67 accepted=3``::

    eagle3_cycle:
      pattern: 'EAGLE3_PROFILE cycle=(?P<cycle>\\d+) draft_ms=(?P<draft_ms>[\\d.]+) ...'
      units: {draft_ms: ms, verify_ms: ms, accepted: tokens}
      breakdown: [draft_ms, verify_ms]   # parts of one cycle, for the cycle-breakdown figure

Each matching line is one row (``source`` = the parser's name). A group that is not a number
stays text and is counted; nothing a log contains makes a parser raise.
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from specsweep.record import names
from specsweep.record.errors import ConfigError
from specsweep.record.segments import LogLine, Segments


@dataclass(frozen=True)
class UserParser:
    name: str
    regex: re.Pattern[str]
    units: dict[str, str]
    breakdown: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()  # engine kinds it applies to; empty = all
    # Matches at the start of each log that belong to warmup requests (phase "warmup", not summarised);
    # only for logs whose session recorded no request offsets (segments.py places lines by offset).
    skip_first: int = 0
    # Groups that identify a line (a cycle counter, a rank) rather than measure something: not averaged.
    identifiers: tuple[str, ...] = ()
    # Only lines whose group has this value are kept, e.g. {tp_rank: "0"}: one tensor-parallel rank.
    keep: dict[str, str] = field(default_factory=dict)

    @property
    def measures(self) -> list[str]:
        return [c for c in self.columns if c not in self.identifiers]

    @property
    def columns(self) -> list[str]:
        return list(self.regex.groupindex)

    def applies_to(self, kind: str) -> bool:
        return not self.kinds or kind in self.kinds


def compile_parsers(spec: dict[str, Any] | None) -> list[UserParser]:
    """Check and compile the ``profile_parsers`` section; errors name the key and the fix."""
    return [_compile_parser(name, entry) for name, entry in (spec or {}).items()]


def _compile_parser(name: str, entry: dict[str, Any]) -> UserParser:
    """One ``profile_parsers/<name>`` entry: its name, its pattern, then what it says of the pattern's groups."""
    key = f"profile_parsers/{name}"
    names.check(name, key, names.COLUMN_NAME, f"{names.COLUMN_NAME_RULE} (it prefixes summary.csv columns)")
    regex = _pattern(key, entry["pattern"])
    groups = list(regex.groupindex)
    for part in ("units", "breakdown", "identifiers", "keep"):
        unknown = [g for g in entry.get(part, []) if g not in groups]
        if unknown:
            raise ConfigError(
                f"{key}/{part}: {', '.join(unknown)} is not a named group of the pattern (groups: {', '.join(groups)})"
            )
    units = dict(entry.get("units", {}))
    breakdown = tuple(entry.get("breakdown", []))
    identifiers = tuple(entry.get("identifiers", []))
    _check_roles(key, units, breakdown, identifiers)
    return UserParser(
        name=name,
        regex=regex,
        units=units,
        breakdown=breakdown,
        kinds=tuple(entry.get("engines", [])),
        skip_first=int(entry.get("skip_first", 0)),
        identifiers=identifiers,
        keep={group: _value_text(value) for group, value in entry.get("keep", {}).items()},
    )


def _pattern(key: str, pattern: str) -> re.Pattern[str]:
    """The compiled pattern, which must name at least one group (each group is a profile.csv column)."""
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise ConfigError(
            f"{key}/pattern: not a valid regular expression ({error}); "
            f"quote it in single quotes in YAML so backslashes stay as written"
        ) from None
    if not regex.groupindex:
        raise ConfigError(f"{key}/pattern: has no named group; write each value as (?P<column>...)")
    return regex


def _check_roles(key: str, units: dict[str, str], breakdown: tuple[str, ...], identifiers: tuple[str, ...]) -> None:
    """The parts of a cycle (breakdown) share one unit and are measures, never identifiers."""
    if len({units.get(g) for g in breakdown}) > 1:
        raise ConfigError(
            f"{key}/breakdown: the parts of a cycle must share one unit in 'units' "
            f"(found {', '.join(f'{g}: {units.get(g)}' for g in breakdown)})"
        )
    if set(identifiers) & set(breakdown):
        raise ConfigError(
            f"{key}/identifiers: {', '.join(sorted(set(identifiers) & set(breakdown)))} is also in breakdown; "
            f"a breakdown part is a measure, not an identifier"
        )


def _value_text(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


# Seconds one parser may spend on one line. A linear pattern needs microseconds; a pattern with catastrophic
# backtracking ((a+)+$ on a long line) would spin for hours without a word.
LINE_BUDGET_S = 2.0
PROGRESS_EVERY_S = 10.0


class ParserTooSlow(RuntimeError):
    """A user profile parser spent more than LINE_BUDGET_S on one line."""


@dataclass
class UserRows:
    """Rows of the user parsers: to ``sink`` as soon as each is read (a log of millions of lines is never held),
    or, without one, collected in ``rows``."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    matched: dict[str, int] = field(default_factory=dict)
    non_numeric: int = 0  # group values kept as text because they are not numbers
    sink: Callable[[dict[str, Any]], Any] | None = None
    # The parser searching now and since when (time.monotonic), for the time budget (read_log).
    searching: tuple[str, float] | None = None
    # Where each request starts in the log (segments.py): a line's phase and run come from its offset
    # (lines read with segments.lines_with_offsets); without it, from skip_first.
    segments: Segments | None = None

    def feed(self, line: str, parsers: list[UserParser]) -> None:
        for parser in parsers:
            self.searching = (parser.name, time.monotonic())
            match = parser.regex.search(line)
            self.searching = None
            if match is None:
                continue
            seen = self.matched[parser.name] = self.matched.get(parser.name, 0) + 1
            if any(match.group(g) != value for g, value in parser.keep.items()):
                continue  # another rank's line (keep)
            if self.segments is not None and isinstance(line, LogLine):
                row: dict[str, Any] = {"source": parser.name, **self.segments.locate(line.start).columns()}
            else:
                row = {"phase": "warmup" if seen <= parser.skip_first else "run", "source": parser.name}
            for column, value in match.groupdict().items():
                row[column] = self._value(value)
            if self.sink is None:
                self.rows.append(row)
            else:
                self.sink(row)

    def read_log(
        self, lines: Iterable[str], parsers: list[UserParser], source: str, progress: TextIO, label: str
    ) -> int:
        """Feed every line of a log (``source`` names it) with each parser held to LINE_BUDGET_S per line, and a
        progress line every PROGRESS_EVERY_S; returns the number of lines."""
        count, started = 0, time.monotonic()
        last = started
        with _budget(self, source, lambda: count):
            for count, line in enumerate(lines, 1):
                self.feed(line, parsers)
                if count % 16384 == 0 and (now := time.monotonic()) - last >= PROGRESS_EVERY_S:
                    last = now
                    print(
                        f"{label}: profile parsers: {count:,} lines read in {now - started:.0f} s "
                        f"({', '.join(f'{p.name} {self.matched.get(p.name, 0)} rows' for p in parsers)})",
                        file=progress,
                        flush=True,
                    )
        return count

    def _value(self, text: str | None) -> float | str | None:
        if text is None:
            return None
        try:
            return float(text)
        except ValueError:
            self.non_numeric += 1
            return text


@contextlib.contextmanager
def _budget(rows: UserRows, source: str, lines: Callable[[], int]) -> Iterator[None]:
    """Raise ParserTooSlow (naming the parser) when one search has run past LINE_BUDGET_S: a timer checks four
    times a second (the regex engine lets a signal handler run mid-search). Signals reach the main thread only:
    elsewhere the log is read without a budget."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def check(_signum: int, _frame: object) -> None:
        if rows.searching is not None and time.monotonic() - rows.searching[1] > LINE_BUDGET_S:
            name = rows.searching[0]
            rows.searching = None
            raise ParserTooSlow(
                f"profile_parsers/{name}: its pattern spent more than {LINE_BUDGET_S:.0f} s on line {lines()} of "
                f"{source} (catastrophic backtracking, e.g. a nested quantifier like (a+)+ or (.*)*); rewrite the "
                f"pattern so that each part can match a piece of the line in one way only"
            )

    previous = signal.signal(signal.SIGALRM, check)
    signal.setitimer(signal.ITIMER_REAL, 0.25, 0.25)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
