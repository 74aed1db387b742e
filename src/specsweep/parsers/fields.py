"""``key: value, key: value`` log payloads, read by key rather than by position.

Engines add, drop and reorder fields between versions (SGLang's Decode batch line changed five
times from 0.4.3 to 0.5.23), so parsers find each field by its name and ignore the rest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# A key starts after the line start or ", ", begins with a letter or '#', and ends at ": ".
# Values may themselves hold ", " (vLLM's per-position rates), so a value runs to the next key.
KEY = re.compile(r"(?:^|,\s+)([A-Za-z#][A-Za-z0-9#_ ()/.'-]*?):\s")
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|\bnan\b", re.IGNORECASE)


@dataclass
class LogRows:
    """Rows a log parser found, and how much of the log it recognised."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    lines: int = 0
    matched: int = 0  # lines of the kind the parser reads
    malformed: int = 0  # such lines whose content it could not read (counted, never raised)


def parse_marked(lines: Iterable[str], classify: Callable[[str], Any],
                 parse_line: Callable[[str, Any], dict[str, Any] | None]) -> LogRows:
    """Stream ``lines``; give each one ``classify`` recognises to ``parse_line``; count what fails.

    ``classify`` returns None for lines of no interest, else a kind passed on to ``parse_line``.
    A line that cannot be read is counted as malformed, never raised.
    """
    result = LogRows()
    for line in lines:
        result.lines += 1
        kind = classify(line)
        if kind is None:
            continue
        result.matched += 1
        try:
            row = parse_line(strip_ansi(line), kind)
        except (ValueError, IndexError):
            row = None
        if row is None:
            result.malformed += 1
        else:
            result.rows.append(row)
    return result


def strip_ansi(line: str) -> str:
    return ANSI.sub("", line)


def key_values(text: str) -> dict[str, str]:
    """``"a: 1, b c: 2.5 tok/s, d: x, y"`` -> ``{"a": "1", "b c": "2.5 tok/s", "d": "x, y"}``."""
    found = list(KEY.finditer(text))
    pairs: dict[str, str] = {}
    for this, following in zip(found, [*found[1:], None], strict=True):
        end = following.start() if following else len(text)
        pairs[this[1].strip()] = text[this.end():end].strip().rstrip(",").strip()
    return pairs


def number(value: str | None) -> float | None:
    """First number in a value (``"70.0%"`` -> 70.0, ``"12 tokens"`` -> 12.0); None when there is none."""
    if value is None:
        return None
    match = NUMBER.search(value)
    return float(match[0]) if match else None


def integer(value: str | None) -> int | None:
    parsed = number(value)  # a 5000-digit count is inf as a float: not an integer, never an exception
    return int(parsed) if parsed is not None and math.isfinite(parsed) else None
