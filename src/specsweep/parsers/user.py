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

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from specsweep.config import ConfigError

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")


@dataclass(frozen=True)
class UserParser:
    name: str
    regex: re.Pattern[str]
    units: dict[str, str]
    breakdown: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()  # engine kinds it applies to; empty = all
    # Matches at the start of each log that belong to warmup requests (phase "warmup", not summarised).
    skip_first: int = 0

    @property
    def columns(self) -> list[str]:
        return list(self.regex.groupindex)

    def applies_to(self, kind: str) -> bool:
        return not self.kinds or kind in self.kinds


def compile_parsers(spec: dict[str, Any] | None) -> list[UserParser]:
    """Check and compile the ``profile_parsers`` section; errors name the key and the fix."""
    parsers = []
    for name, entry in (spec or {}).items():
        key = f"profile_parsers/{name}"
        if not NAME.match(name):
            raise ConfigError(
                f"{key}: use 1-40 characters A-Z a-z 0-9 _ starting with a letter (it prefixes summary.csv columns)"
            )
        try:
            regex = re.compile(entry["pattern"])
        except re.error as error:
            raise ConfigError(
                f"{key}/pattern: not a valid regular expression ({error}); "
                f"quote it in single quotes in YAML so backslashes stay as written"
            ) from None
        groups = list(regex.groupindex)
        if not groups:
            raise ConfigError(f"{key}/pattern: has no named group; write each value as (?P<column>...)")
        for part in ("units", "breakdown"):
            unknown = [g for g in entry.get(part, []) if g not in groups]
            if unknown:
                raise ConfigError(
                    f"{key}/{part}: {', '.join(unknown)} is not a named group of the pattern "
                    f"(groups: {', '.join(groups)})"
                )
        units = dict(entry.get("units", {}))
        breakdown = tuple(entry.get("breakdown", []))
        if len({units.get(g) for g in breakdown}) > 1:
            raise ConfigError(
                f"{key}/breakdown: the parts of a cycle must share one unit in 'units' "
                f"(found {', '.join(f'{g}: {units.get(g)}' for g in breakdown)})"
            )
        parsers.append(
            UserParser(
                name=name,
                regex=regex,
                units=units,
                breakdown=breakdown,
                kinds=tuple(entry.get("engines", [])),
                skip_first=int(entry.get("skip_first", 0)),
            )
        )
    return parsers


@dataclass
class UserRows:
    rows: list[dict[str, Any]] = field(default_factory=list)
    matched: dict[str, int] = field(default_factory=dict)
    non_numeric: int = 0  # group values kept as text because they are not numbers

    def feed(self, line: str, parsers: list[UserParser]) -> None:
        for parser in parsers:
            match = parser.regex.search(line)
            if match is None:
                continue
            seen = self.matched[parser.name] = self.matched.get(parser.name, 0) + 1
            row: dict[str, Any] = {"phase": "warmup" if seen <= parser.skip_first else "run", "source": parser.name}
            for column, value in match.groupdict().items():
                row[column] = self._value(value)
            self.rows.append(row)

    def _value(self, text: str | None) -> float | str | None:
        if text is None:
            return None
        try:
            return float(text)
        except ValueError:
            self.non_numeric += 1
            return text


def tap(lines: Iterable[str], parsers: list[UserParser], into: UserRows) -> Iterator[str]:
    """Pass lines through to the engine's parser while the user parsers read them (one pass over the log)."""
    for line in lines:
        if parsers:
            into.feed(line, parsers)
        yield line
