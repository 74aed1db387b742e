"""vLLM log lines: speculative metrics (V1 and V0) and periodic throughput, one row per line.

Formats from the wheels (``pip download --no-deps vllm==X``):
* V1 0.10.2+ ``vllm/v1/spec_decode/metrics.py::SpecDecodingLogging.log``: ``SpecDecoding metrics:
  Mean acceptance length: %.2f, Accepted throughput: ..., Drafted throughput: ..., Accepted: %d tokens,
  Drafted: %d tokens, Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%``;
* V1 0.8.5.post1 (to 0.10.1.1) same file: ``SpecDecoding metrics: Draft acceptance rate: %.1f%%,
  Mean acceptance length: %.2f, Accepted: %d tokens, Drafted: %d tokens, Per-position acceptance rate: %s``
  (its mean length is accepted / drafts, without the bonus token);
* V0 0.6.6.post1 ``vllm/engine/metrics.py``: ``Speculative metrics: Draft acceptance rate: %.3f,
  System efficiency: ..., Number of speculative tokens: k, Number of accepted tokens: n,
  Number of draft tokens: n, Number of emitted tokens: n.`` (cumulative counts);
* throughput ``Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, ...``
  (V0 ``vllm/engine/metrics.py``, V1 ``vllm/v1/metrics/loggers.py``, ``Engine 000: `` prefix).
Lines may carry ANSI colours and a ``(EngineCore pid=N)`` / ``(APIServer pid=N)`` prefix.
``draft_acceptance_rate`` is stored as a fraction (V1 logs a percentage, V0 a fraction).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from specsweep.parsers import chunked
from specsweep.parsers.fields import LogRows, integer, key_values, number, parse_marked
from specsweep.parsers.formats import LogFormat

PROCESS = re.compile(r"\((\w+) pid=(\d+)\)")
TIME = re.compile(r"\b(\d\d-\d\d \d\d:\d\d:\d\d)\b")
ENGINE = re.compile(r"Engine (\d+):")
MARKERS = {
    "SpecDecoding metrics:": "spec_v1",
    "Speculative metrics:": "spec_v0",
    "Avg prompt throughput:": "throughput",
}

COLUMNS = [
    "line",
    "time",
    "process",
    "engine",
    "accepted",
    "drafted",
    "emitted",
    "mean_acceptance_length",
    "draft_acceptance_rate",
    "per_position",
    "prompt_throughput",
    "gen_throughput",
    "running",
    "waiting",
]
PER_REQUEST = False


def parse(lines: Iterable[str], sink: Callable[[dict[str, Any]], Any] | None = None) -> LogRows:
    return parse_marked(lines, _classify, parse_line, sink)


def _classify(line: str) -> str | None:
    return next((k for marker, k in MARKERS.items() if marker in line), None)


def parse_line(line: str, kind: str) -> dict[str, Any] | None:
    marker = next(m for m, k in MARKERS.items() if k == kind)
    start = line.index(marker)
    body = line[start + len(marker) :] if kind != "throughput" else line[start:]
    fields = key_values(body.strip().rstrip("."))
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    head = line[:start]
    process = PROCESS.search(head)
    row.update(
        line=kind,
        time=(m[1] if (m := TIME.search(head)) else None),
        process=process[1] if process else None,
        engine=int(m[1]) if (m := ENGINE.search(head)) else None,
    )
    if kind == "throughput":
        row.update(
            prompt_throughput=number(fields.get("Avg prompt throughput")),
            gen_throughput=number(fields.get("Avg generation throughput")),
            running=integer(fields.get("Running")),
            waiting=integer(fields.get("Waiting", fields.get("Pending"))),
        )
        return row if row["gen_throughput"] is not None else None
    if kind == "spec_v1":
        rate = number(fields.get("Avg Draft acceptance rate", fields.get("Draft acceptance rate")))
        row.update(
            accepted=integer(fields.get("Accepted")),
            drafted=integer(fields.get("Drafted")),
            mean_acceptance_length=number(fields.get("Mean acceptance length")),
            draft_acceptance_rate=rate / 100 if rate is not None else None,
            per_position=fields.get("Per-position acceptance rate"),
        )
    else:
        row.update(
            accepted=integer(fields.get("Number of accepted tokens")),
            drafted=integer(fields.get("Number of draft tokens")),
            emitted=integer(fields.get("Number of emitted tokens")),
            draft_acceptance_rate=number(fields.get("Draft acceptance rate")),
        )
    return row if row["accepted"] is not None and row["drafted"] is not None else None


CHUNKED = chunked.ChunkedFormat(
    marker_line=re.compile(rb"^[^\n]*(?:%b)[^\n]*\n" % b"|".join(re.escape(m.encode()) for m in MARKERS), re.MULTILINE),
    classify=_classify,
    parse_line=parse_line,
)


LOG_FORMAT = LogFormat("vllm", parse, COLUMNS, per_request=PER_REQUEST, chunked=CHUNKED)
