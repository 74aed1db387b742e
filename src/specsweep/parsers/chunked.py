"""Chunked reading of a log file: one compiled regex over megabytes at a time instead of Python per line.

A multi-GB SGLang log is mostly ``Decode batch`` lines of a few known layouts. ``parse_file`` reads
the file as text in large chunks (cut at a newline), and ``fast.findall`` reads every line of those
layouts at C speed. Every other line holding a marker goes through the per-line parser
(``fields.read_marked_line``), so results equal the per-line parser's on any input: the fast pattern
is anchored to whole lines and only accepts lines the per-line parser reads the same way.

Text mode (universal newlines, ``errors="replace"``) gives the same lines as iterating the file.
Memory stays bounded by the chunk size; rows go to ``sink`` as they are read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specsweep.parsers.fields import LogRows, read_marked_line

CHUNK_CHARS = 4 << 20  # ~4 MB of text per regex pass: large enough to amortise, small enough to stream


@dataclass(frozen=True)
class ChunkedFormat:
    """How to read one log format in chunks."""

    marker_line: re.Pattern[str]  # MULTILINE, matches a whole line (with its "\n") holding any marker
    classify: Callable[[str], Any]  # as for parse_marked
    parse_line: Callable[[str, Any], dict[str, Any] | None]  # as for parse_marked
    # Optional fast path: a MULTILINE pattern of whole common lines (ending in "\n"), its groups turned
    # into a row by to_row; `marker` occurs exactly once in each such line.
    fast: re.Pattern[str] | None = None
    to_row: Callable[[tuple[str, ...]], dict[str, Any]] | None = None
    marker: str = ""


def parse_file(path: str | Path, form: ChunkedFormat,
               sink: Callable[[dict[str, Any]], Any] | None = None) -> LogRows:
    result = LogRows(sink=sink)
    rest = ""
    with open(path, encoding="utf-8", errors="replace") as handle:
        while chunk := handle.read(CHUNK_CHARS):
            cut = chunk.rfind("\n") + 1
            if cut == 0:  # no newline yet: a very long line keeps growing
                rest += chunk
                continue
            _read_chunk(rest + chunk[:cut], form, result)
            rest = chunk[cut:]
    if rest:
        _read_chunk(rest + "\n", form, result)  # the last line, unterminated: still one line
    return result


def _read_chunk(text: str, form: ChunkedFormat, result: LogRows) -> None:
    """Read whole lines (``text`` ends with "\n")."""
    result.lines += text.count("\n")
    if form.fast is not None and form.to_row is not None:
        found = form.fast.findall(text)
        if len(found) == text.count(form.marker):  # every marked line is a fast one (the common case)
            result.matched += len(found)
            to_row, add = form.to_row, result.add
            for groups in found:
                add(to_row(groups))
            return
        last = 0
        for match in form.fast.finditer(text):
            _read_slow(text, last, match.start(), form, result)
            result.matched += 1
            result.add(form.to_row(match.groups()))
            last = match.end()
        _read_slow(text, last, len(text), form, result)
    else:
        _read_slow(text, 0, len(text), form, result)


def _read_slow(text: str, start: int, end: int, form: ChunkedFormat, result: LogRows) -> None:
    """The per-line parser on the lines of text[start:end] (whole lines) that hold a marker."""
    for match in form.marker_line.finditer(text, start, end):
        read_marked_line(match[0], form.classify, form.parse_line, result)
