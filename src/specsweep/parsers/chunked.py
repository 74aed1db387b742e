"""Chunked reading of a log file: one compiled regex over megabytes at a time instead of Python per line.

A multi-GB SGLang log is mostly ``Decode batch`` lines of a few known layouts. ``parse_file`` reads
the file as bytes in large chunks (cut at a newline), and ``fast.findall`` reads every line of those
layouts at C speed. Every other line holding a marker goes through the per-line parser
(``fields.read_marked_line``), so results equal the per-line parser's on any input: the fast pattern
is anchored to whole lines and only accepts lines the per-line parser reads the same way.

Lines are those of iterating the file in text mode (universal newlines, ``errors="replace"``): "\r\n"
and "\r" become "\n", and a line reaching the per-line parser is decoded as text mode decodes it; the
fast patterns read ASCII only, so common lines are never decoded (~10% of the time). Memory stays
bounded by the chunk size; rows go to ``sink`` as they are read. Making a dict per row costs more than
the regex, so a CSV writer (parsers/profile.py) can take the fast lines as CSV text (``CsvLines``): the
fast patterns capture each cell as csv writes it, and a chunk's lines are joined in C.
"""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specsweep.parsers.fields import LogRows, read_marked_line

CHUNK_CHARS = 4 << 20  # 4 MB per regex pass: large enough to amortise, small enough to stream


@dataclass(frozen=True)
class FastPattern:
    """A MULTILINE pattern of whole common lines (ending in "\n"), its groups turned into a row by to_row."""

    pattern: re.Pattern[bytes]
    to_row: Callable[[tuple[bytes, ...]], dict[str, Any]]
    # The groups as the format's columns, each the (ASCII) text csv.writer writes for the row's value ("" for
    # None) and none that csv quotes.
    to_cells: Callable[[tuple[bytes, ...]], tuple[bytes, ...]]


@dataclass(frozen=True)
class CsvLines:
    """Where fast lines go as CSV text instead of rows: ``write(text, rows)`` gets whole lines, each ``lead``
    (cells before the format's columns, with their ",") then the format's columns."""

    write: Callable[[str, int], Any]
    lead: str = ""


@dataclass(frozen=True)
class ChunkedFormat:
    """How to read one log format in chunks."""

    marker_line: re.Pattern[bytes]  # MULTILINE, matches a whole line (with its "\n") holding any marker
    classify: Callable[[str], Any]  # as for parse_marked
    parse_line: Callable[[str, Any], dict[str, Any] | None]  # as for parse_marked
    # Optional fast path; `marker` occurs exactly once in each line it reads.
    fast: FastPattern | None = None
    marker: bytes = b""
    # Optional faster path: a pattern for the layout of one fast line, reading a subset of fast's lines
    # (the same rows); tried on every chunk, from the file's first fast line on, until a chunk has others.
    specialise: Callable[[bytes], FastPattern | None] | None = None


def chunks(path: str | Path, unterminated: list[bytes] | None = None) -> Iterator[bytes]:
    """The file's bytes in pieces of about CHUNK_CHARS, each whole lines ending in "\n". A last line without its
    newline (a log still being written) goes to ``unterminated`` (fields.whole_lines says why), else it gets one."""
    rest = b""
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_CHARS):
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:  # no newline yet: a very long line keeps growing
                rest += chunk
                continue
            yield rest + chunk[:cut]
            rest = chunk[cut:]
    if rest and unterminated is not None:
        whole = rest.rfind(b"\r") + 1  # lines ended by a lone "\r" (universal newlines) are whole
        if whole:
            yield rest[:whole]
        if rest[whole:]:
            unterminated.append(rest[whole:])
    elif rest:
        yield rest + b"\n"


def parse_file(
    path: str | Path,
    form: ChunkedFormat,
    sink: Callable[[dict[str, Any]], Any] | None = None,
    csv_lines: CsvLines | None = None,
) -> LogRows:
    """The rows of the per-line parser, in order: to ``sink`` (or kept), or, for fast lines, to ``csv_lines``."""
    result = LogRows(sink=sink)
    special: FastPattern | None = None
    cut: list[bytes] = []
    with no_cycle_collection():
        for text in chunks(path, cut):
            special = read_chunk(text, form, special, result, csv_lines)
    count_cut(result, cut, form)
    return result


def count_cut(result: LogRows, cut: list[bytes], form: ChunkedFormat) -> None:
    """A last line without its newline (``chunks``) counts as a line, and as malformed when it holds the format's
    marker: never as a row."""
    for line in cut:
        result.lines += 1
        if form.marker_line.match(line + b"\n"):
            result.matched += 1
            result.malformed += 1


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Reading makes millions of short-lived tuples and no reference cycles: the cyclic garbage collector
    would scan them again and again for nothing (~5 % of the parse time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_chunk(
    text: bytes, form: ChunkedFormat, special: FastPattern | None, result: LogRows, csv_lines: CsvLines | None
) -> FastPattern | None:
    """Read whole lines (``text`` ends with "\n") into ``result``, after a chunk that used ``special`` (or
    None: detect the layout anew); returns the specialised pattern for the next chunk."""
    if b"\r" in text:  # universal newlines; a "\r" ending a chunk's text is never split from its "\n"
        text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    result.lines += text.count(b"\n")
    if form.fast is None:
        _read_slow(text, 0, len(text), form, result)
        return None
    marked = text.count(form.marker)
    if marked == 0:
        return special
    if special is None and form.specialise is not None:  # the layout of the first marked line, if fast
        first = form.fast.pattern.match(text, text.rfind(b"\n", 0, text.find(form.marker)) + 1)
        special = form.specialise(first[0]) if first else None
    for fast in (special, form.fast):
        if fast is not None and len(found := fast.pattern.findall(text)) == marked:
            # every marked line is a fast one (the common case)
            result.matched += len(found)
            if csv_lines is None:
                result.add_all(map(fast.to_row, found))
            elif found:
                lead = csv_lines.lead.encode()
                lines = lead + (b"\n" + lead).join(map(b",".join, map(fast.to_cells, found))) + b"\n"
                csv_lines.write(lines.decode("ascii"), len(found))
                result.emitted += len(found)
            return special
        special = None  # this chunk has other layouts: detect again in the next one
    last = 0
    for match in form.fast.pattern.finditer(text):
        _read_slow(text, last, match.start(), form, result)
        result.matched += 1
        result.add(form.fast.to_row(match.groups()))
        last = match.end()
    _read_slow(text, last, len(text), form, result)
    return None


def _read_slow(text: bytes, start: int, end: int, form: ChunkedFormat, result: LogRows) -> None:
    """The per-line parser on the lines of text[start:end] (whole lines) that hold a marker."""
    for match in form.marker_line.finditer(text, start, end):
        read_marked_line(match[0].decode("utf-8", "replace"), form.classify, form.parse_line, result)
