"""``key: value, key: value`` log payloads, read by key rather than by position.

Engines add, drop and reorder fields between versions (SGLang's Decode batch line changed five
times from 0.4.3 to 0.5.23), so parsers find each field by its name and ignore the rest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# A key starts after the line start or ", ", begins with a letter or '#', and ends at ": ".
# Values may themselves hold ", " (vLLM's per-position rates), so a value runs to the next key.
KEY = re.compile(r"(?:^|,\s+)([A-Za-z#][A-Za-z0-9#_ ()/.'-]*?):\s")
SIMPLE_KEY = re.compile(r"[A-Za-z#][A-Za-z0-9#_ ()/.'-]*")  # what KEY accepts as a key
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|\bnan\b", re.IGNORECASE)


@dataclass
class LogRows:
    """Rows a log parser found, and how much of the log it recognised.

    With a ``sink``, each row goes to it as soon as it is read and is not kept, so a multi-GB log
    parses in constant memory (``emitted`` counts them); without one, rows collect in ``rows``.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    lines: int = 0
    matched: int = 0  # lines of the kind the parser reads
    malformed: int = 0  # such lines whose content it could not read (counted, never raised)
    sink: Callable[[dict[str, Any]], Any] | None = None
    emitted: int = 0

    def add(self, row: dict[str, Any]) -> None:
        self.emitted += 1
        if self.sink is None:
            self.rows.append(row)
        else:
            self.sink(row)

    def add_all(self, rows: Iterable[dict[str, Any]]) -> None:
        """``add`` of each row, without a method call per row (the chunked reader's fast path)."""
        if self.sink is None:
            before = len(self.rows)
            self.rows.extend(rows)
            self.emitted += len(self.rows) - before
            return
        sink, count = self.sink, 0
        for row in rows:
            sink(row)
            count += 1
        self.emitted += count


def parse_marked(
    lines: Iterable[str],
    classify: Callable[[str], Any],
    parse_line: Callable[[str, Any], dict[str, Any] | None],
    sink: Callable[[dict[str, Any]], Any] | None = None,
) -> LogRows:
    """Stream ``lines``; give each one ``classify`` recognises to ``parse_line``; count what fails.

    ``classify`` returns None for lines of no interest, else a kind passed on to ``parse_line``.
    A line that cannot be read is counted as malformed, never raised.
    """
    result = LogRows(sink=sink)
    for line in lines:
        result.lines += 1
        read_marked_line(line, classify, parse_line, result)
    return result


def read_marked_line(
    line: str, classify: Callable[[str], Any], parse_line: Callable[[str, Any], dict[str, Any] | None], result: LogRows
) -> None:
    """One line of ``parse_marked`` (without counting it in ``lines``): shared with the chunked reader
    (parsers/chunked.py) so both read every line the same way."""
    kind = classify(line)
    if kind is None:
        return
    result.matched += 1
    try:
        row = parse_line(strip_ansi(line) if "\x1b" in line else line, kind)
    except (ValueError, IndexError):
        row = None
    if row is None:
        result.malformed += 1
    else:
        result.add(row)


def whole_lines(lines: Iterable[str], cut: list[str]) -> Iterator[str]:
    """``lines`` of a file, except a last one without its newline: a log still being written may end inside a
    number ("eval time = 1432" of "14321.77 ms"), which would read as a wrong value. It goes to ``cut``."""
    previous = None
    for line in lines:
        if previous is not None:
            yield previous
        previous = line
    if previous is not None:
        if previous.endswith(("\n", "\r")):
            yield previous
        else:
            cut.append(previous)


def strip_ansi(line: str) -> str:
    return ANSI.sub("", line)


def simple_key_values(text: str) -> dict[str, str]:
    """``key_values`` for payloads whose values hold no ", " (SGLang's), by str.split: ~4x faster.

    Falls back to ``key_values`` as soon as a part is not a plain ``key: value``, so both read the
    same line the same way; parsing speed matters on multi-GB logs (benchmarks/scale.py).
    """
    pairs: dict[str, str] = {}
    for part in text.rstrip().rstrip(",").split(", "):
        key, separator, value = part.partition(": ")
        key = key.strip()
        if not separator or not SIMPLE_KEY.fullmatch(key):
            return key_values(text)
        pairs[key] = value.strip().rstrip(",").strip()
    return pairs


def key_values(text: str) -> dict[str, str]:
    """``"a: 1, b c: 2.5 tok/s, d: x, y"`` -> ``{"a": "1", "b c": "2.5 tok/s", "d": "x, y"}``."""
    found = list(KEY.finditer(text))
    pairs: dict[str, str] = {}
    for this, following in zip(found, [*found[1:], None], strict=True):
        end = following.start() if following else len(text)
        pairs[this[1].strip()] = text[this.end() : end].strip().rstrip(",").strip()
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
