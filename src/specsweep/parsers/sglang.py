"""SGLang scheduler ``Decode batch`` log lines, 0.4.3 to 0.5.23, one row per logged interval.

Formats from the wheels (``pip download --no-deps sglang==X``): 0.4.3.post2
``managers/scheduler.py::log_decode_stats`` (``Decode batch. ...``, no trailing comma),
0.4.10.post2 ``managers/scheduler_metrics_mixin.py`` (``cuda graph:``, trailing ``, ``),
0.5.4 same file (``Decode batch [iter], ...``, ``accept rate``), 0.5.10
``observability/scheduler_metrics_mixin.py`` (``[iter]`` optional, no trailing comma, optional MFU
suffix), 0.5.23 ``managers/scheduler_components/metrics_reporter.py`` (``cap len``, ``block accept len``).
The prefix is ``[YYYY-mm-dd HH:MM:SS(.mmm)( DPn)( PPn)( TPn)( EPn)...]`` (``utils.configure_logger``).

``accept len`` (tokens per verify step, bonus included) is kept; ``accept rate`` is kept raw but
changed meaning in 0.5.4, 0.5.10 and 0.5.23, so nothing downstream compares it across versions.
``gen throughput`` is server-wide over the interval since the previous Decode line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from specsweep.parsers import chunked
from specsweep.parsers.fields import LogRows, integer, number, parse_marked, simple_key_values

MARKER = re.compile(r"Decode batch(?:\.|\s*\[(\d+)\])?,?\s*")
PREFIX = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)((?:\s+[A-Z_]+\d+)*)\]")
RANK = re.compile(r"([A-Z_]+?)(\d+)")

COLUMNS = ["time", "dp_rank", "tp_rank", "iter", "running_req", "queue_req", "tokens", "token_usage",
           "accept_len", "accept_rate", "gen_throughput", "graph"]
PER_REQUEST = False


def parse(lines: Iterable[str], sink: Callable[[dict[str, Any]], Any] | None = None) -> LogRows:
    return parse_marked(lines, _classify, _parse_marked_line, sink)


def parse_file(path: str | Path, sink: Callable[[dict[str, Any]], Any] | None = None) -> LogRows:
    """``parse`` of a whole file, the common layouts read by one regex per chunk (same rows, ~10x faster)."""
    return chunked.parse_file(path, CHUNKED, sink)


def _classify(line: str) -> bool | None:
    return True if "Decode batch" in line else None


def _parse_marked_line(line: str, _kind: object) -> dict[str, object] | None:
    return parse_line(line)


_INT, _DEC = r"(\d{1,15})", r"(\d{1,15}\.\d{1,15})"  # 15 digits: int(x) == int(float(x)), as integer() reads it
# The Decode batch layouts of 0.4.3 to 0.5.23 (fixture) as one whole-line pattern, keys in their logged
# order; single spaces, no ANSI, plain numbers. Anything else (a missing or extra key, ranks in another
# order, odd spacing) does not match and goes through parse_line, so the two never disagree.
FAST = re.compile(
    r"^(?:\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)(?: DP" + _INT + r")?(?: TP" + _INT + r")?"
    r"(?: (?:PP|EP)\d{1,15})*\] )?"
    r"Decode batch(?:\.|,| \[" + _INT + r"\],) #running-req: " + _INT + r", #token: " + _INT + ", "
    r"token usage: " + _DEC + r", (?:accept len: " + _DEC + r", )?(?:accept rate: " + _DEC + r", )?"
    r"(?:cap len: \d{1,15}\.\d{1,15}, )?(?:block accept len: \d{1,15}\.\d{1,15}, )?"
    r"(?:[a-z]{1,10} graph: (True|False), )?gen throughput \(token/s\): " + _DEC + r", #queue-req: " + _INT +
    r"(?:, est\. decode TFLOPS/s \(per GPU\): \d+\.\d+, est\. read BW \(GB/s per GPU\): \d+\.\d+, "
    r"est\. write BW \(GB/s per GPU\): \d+\.\d+)?(?:, )?\n", re.MULTILINE)


def _fast_row(groups: tuple[str, ...]) -> dict[str, object]:
    """A FAST match as the row parse_line makes of the same line (same keys, values and types)."""
    time, dp, tp, step, running, tokens, usage, length, rate, graph, throughput, queue = groups
    return {"time": time or None, "dp_rank": int(dp) if dp else None, "tp_rank": int(tp) if tp else None,
            "iter": int(step) if step else None, "running_req": int(running), "queue_req": int(queue),
            "tokens": int(tokens), "token_usage": float(usage), "accept_len": float(length) if length else None,
            "accept_rate": float(rate) if rate else None, "gen_throughput": float(throughput),
            "graph": graph or None}


CHUNKED = chunked.ChunkedFormat(marker_line=re.compile(r"^[^\n]*Decode batch[^\n]*\n", re.MULTILINE),
                                classify=_classify, parse_line=_parse_marked_line, fast=FAST,
                                to_row=_fast_row, marker="Decode batch")


def parse_line(line: str) -> dict[str, object] | None:
    marker = MARKER.search(line)
    if marker is None:
        return None
    fields = simple_key_values(line[marker.end():])  # SGLang values hold no ', '
    throughput = number(fields.get("gen throughput (token/s)"))
    if throughput is None:  # every version has it: without it this is not a Decode batch line
        return None
    row: dict[str, object] = dict.fromkeys(COLUMNS)
    if prefix := PREFIX.search(line[:marker.start()]):
        row["time"] = prefix[1]
        ranks = {name: int(value) for name, value in RANK.findall(prefix[2])}
        row.update(dp_rank=ranks.get("DP"), tp_rank=ranks.get("TP"))
    graph = next((v for k, v in fields.items() if k.endswith(" graph")), None)
    row.update(
        iter=int(marker[1]) if marker[1] else None, running_req=integer(fields.get("#running-req")),
        queue_req=integer(fields.get("#queue-req")),
        tokens=integer(fields.get("#token", fields.get("#full token"))),
        token_usage=number(fields.get("token usage", fields.get("full token usage"))),
        accept_len=number(fields.get("accept len")), accept_rate=number(fields.get("accept rate")),
        gen_throughput=throughput, graph=graph)
    return row
