"""A server log -> the configuration's ``profile.csv``: the engine format's rows and user parsers' rows."""

from __future__ import annotations

import collections
import csv
import functools
import io
import math
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any, TextIO, TypeVar

from specsweep.parsers import chunked, log_formats
from specsweep.parsers.chunked import CsvLines
from specsweep.parsers.fields import LogRows, whole_lines
from specsweep.parsers.user import UserRows, compile_parsers
from specsweep.record.atomic import atomic_open
from specsweep.record.segments import PLACE_COLUMNS, RUN, WARMUP, Segments, lines_with_offsets

_Result = TypeVar("_Result")
LARGE_LOG_BYTES = 100 * 10**6  # logs this large get a line before parsing starts
# Workers are forked: "spawn" and "forkserver" (macOS; Linux from Python 3.14) would re-run the calling
# Snakemake script in each worker. Without fork, parsing stays in one process.
_FORK = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None


def write_profile(
    log: str | Path,
    output: str | Path,
    kind: str,
    log_format_name: str,
    profile_parsers: dict[str, Any],
    warmup_requests: int,
    progress: TextIO,
    label: str,
    workers: int = 1,
    segments: Segments | None = None,
) -> list[str]:
    """Parse ``log`` (an engine of adapter ``kind`` writing ``log_format_name``) into ``output``; return
    warnings (a user parser that matched no line).

    Rows stream to the CSV, so a multi-GB log is never held; one progress line says what was read. With
    ``workers`` > 1, a chunked format's chunks are parsed by that many processes (the same bytes out).
    With ``segments`` (the request offsets the session recorded), user parser rows and engine per-request
    rows get their phase, ``run``, ``load_level`` and ``load_window`` from where their line is in the log
    (segments.PLACE_COLUMNS): a load window's requests are never counted as runs. Without segments (logs
    measured before they were recorded, which had no load windows either), per-request rows get their
    phase from the request order and user rows from ``skip_first``.
    """
    log_format = log_formats()[log_format_name]
    # User regex parsers read the same single pass over the log as the engine's own parser.
    user = [p for p in compile_parsers(profile_parsers) if p.applies_to(kind)]
    user_columns = list(dict.fromkeys(c for p in user for c in p.columns))
    size = os.path.getsize(log)
    if size >= LARGE_LOG_BYTES:  # seconds per GB: say what is going on before it starts
        print(f"{label}: parsing {size / 1e6:,.0f} MB of server log", file=progress, flush=True)
    with atomic_open(output, newline="") as handle:
        # A user column named like an engine column (eval_ms) shares it; `source` tells the rows apart.
        placed = segments is not None and (bool(user) or log_format.per_request)
        columns = list(
            dict.fromkeys(["phase", "source", *log_format.columns, *user_columns, *(PLACE_COLUMNS if placed else [])])
        )
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        written = [0]

        def write(row: dict[str, Any]) -> None:
            if not log_format.per_request:
                place: dict[str, Any] = {"phase": "interval"}
            elif segments is not None:  # read_file gives each per-request row its log_offset
                place = segments.locate(row["log_offset"]).columns()
            else:  # measured before segments were recorded (and before load windows): requests in order
                place = {"phase": WARMUP if row["request"] < warmup_requests else RUN}
            writer.writerow({"source": log_format_name, **row, **place})
            written[0] += 1

        # The format's own rows: its chunked reader where it has one (parsers/chunked.py).
        def write_lines(text: str, rows: int) -> None:
            handle.write(text)
            written[0] += rows

        # Its common lines come as CSV text, the same as writer.writerow of their rows, ~3x faster.
        fast = None if log_format.per_request else CsvLines(write_lines, lead=f"interval,{log_format_name},")
        workers = min(workers, math.ceil(size / chunked.CHUNK_CHARS))  # no idle processes
        if fast is not None and log_format.chunked is not None and workers > 1 and _FORK is not None:
            parsed, cut_bytes = LogRows(), []
            for text, counts in _in_order(
                functools.partial(_chunk_profile, log_format_name=log_format_name),
                chunked.chunks(log, cut_bytes),
                workers,
            ):
                handle.write(text)
                parsed.lines, parsed.malformed = parsed.lines + counts.lines, parsed.malformed + counts.malformed
                written[0] += counts.emitted
            chunked.count_cut(parsed, cut_bytes, log_format.chunked)
        else:
            parsed = log_format.read_file(log, sink=write, csv_lines=fast)
        # User parsers read every line in a second pass, each row written as it is found (never held).
        found = UserRows(sink=writer.writerow, segments=segments)
        if user and segments is not None:  # each line with its byte offset: its request by position
            with open(log, "rb") as raw:
                found.read_log(whole_lines(lines_with_offsets(raw), []), user, str(log), progress, label)
        elif user:
            with open(log, errors="replace") as lines:
                found.read_log(whole_lines(lines, []), user, str(log), progress, label)
    print(
        f"{label}: {parsed.lines} log lines, {written[0]} {log_format_name} rows, {parsed.malformed} "
        f"unrecognised lines; user parsers: "
        f"{', '.join(f'{p.name} {found.matched.get(p.name, 0)} rows' for p in user) or 'none'}",
        file=progress,
    )
    warnings = [unmatched_warning(p.name) for p in user if not found.matched.get(p.name)]
    for warning in warnings:
        print(f"{label}: WARNING: {warning}", file=progress)
    return warnings


def unmatched_warning(parser: str) -> str:
    return (
        f"profile parser {parser} matched no line of the server log (check its pattern against the log, "
        f"or its engines list)"
    )


def write_profiles(
    outputs: dict[str, str],
    log_formats: dict[str, dict[str, str]],
    profile_parsers: dict[str, Any],
    warmup_requests: int,
    progress: TextIO,
    workers: int = 1,
    segments: dict[str, Segments | None] | None = None,
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Each server log (``outputs``: log -> its profile.csv) parsed; the profiles by configuration, and what
    parsing each warned of. ``log_formats`` gives each configuration's engine ``kind`` and log ``format``,
    ``segments`` where its session's requests start in its log (none for logs measured before)."""
    import pandas as pd

    from specsweep.record.results import configuration_of_file

    profiles, warnings = {}, {}
    for log, output in outputs.items():
        name = configuration_of_file(log)
        found = log_formats[name]
        warnings[name] = write_profile(
            log,
            output,
            found["kind"],
            found["format"],
            profile_parsers,
            warmup_requests,
            progress,
            name,
            workers,
            (segments or {}).get(name),
        )
        profiles[name] = pd.read_csv(output)
    return profiles, warnings


def _chunk_profile(text: bytes, log_format_name: str) -> tuple[str, LogRows]:
    """One chunk's profile.csv lines, as the one-process path writes them, and its counts (a worker's job).

    The chunk detects its layout anew: the one-process path carries it over from the chunk before."""
    log_format = log_formats()[log_format_name]
    assert log_format.chunked is not None
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["phase", "source", *log_format.columns], lineterminator="\n")
    counts = LogRows(sink=lambda row: writer.writerow({"phase": "interval", "source": log_format_name, **row}))
    with chunked.no_cycle_collection():
        chunked.read_chunk(
            text,
            log_format.chunked,
            None,
            counts,
            CsvLines(lambda lines, _rows: out.write(lines), lead=f"interval,{log_format_name},"),
        )
    counts.sink = None  # goes back to the parent by pickle
    return out.getvalue(), counts


def _in_order(function: Callable[[bytes], _Result], items: Iterable[bytes], workers: int) -> Iterator[_Result]:
    """``map(function, items)`` in ``workers`` processes, in order, with at most 2 x workers items in flight
    (so a multi-GB log streams: memory stays a few chunks per worker)."""
    with ProcessPoolExecutor(workers, mp_context=_FORK) as pool:
        pending: collections.deque[Future[_Result]] = collections.deque()
        for item in items:
            pending.append(pool.submit(function, item))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
