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

import functools
import operator
import re
from collections.abc import Callable, Iterable
from typing import Any

from specsweep.parsers import chunked
from specsweep.parsers.fields import LogRows, integer, number, parse_marked, simple_key_values
from specsweep.parsers.formats import LogFormat

MARKER = re.compile(r"Decode batch(?:\.|\s*\[(\d+)\])?,?\s*")
PREFIX = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)((?:\s+[A-Z_]+\d+)*)\]")
RANK = re.compile(r"([A-Z_]+?)(\d+)")

COLUMNS = [
    "time",
    "dp_rank",
    "tp_rank",
    "iter",
    "running_req",
    "queue_req",
    "tokens",
    "token_usage",
    "accept_len",
    "accept_rate",
    "gen_throughput",
    "graph",
]
PER_REQUEST = False


def parse(lines: Iterable[str], sink: Callable[[dict[str, Any]], Any] | None = None) -> LogRows:
    return parse_marked(lines, _classify, _parse_marked_line, sink)


def _classify(line: str) -> bool | None:
    return True if "Decode batch" in line else None


def _parse_marked_line(line: str, _kind: object) -> dict[str, object] | None:
    return parse_line(line)


# Numbers as captured are the cells csv writes for the values parse_line makes of them (repr of the int or
# float), so the CSV writer (CsvLines) copies the text: no leading zeros, no trailing decimal zeros (0*+ after
# the group drops them: 0.50 -> 0.5, 3.00 -> 3.0), at most 15 significant digits (int() and float() read them
# exactly, and repr gives them back) and no value below 1e-4 (repr writes those as 1e-05). Lines with other
# numbers go to parse_line.
_INT = r"(?:0|[1-9]\d{0,14}+)"
_DEC = r"(?:0\.(?!0000)|[1-9]\d{0,6}+\.)\d(?:\d{0,6}?[1-9])?"  # then 0*+
_ANY_DEC = r"\d{1,15}\.\d{1,15}"  # a number no column reads
# The Decode batch layouts of 0.4.3 to 0.5.23 (fixture) as one whole-line pattern, keys in their logged
# order; single spaces, no ANSI, plain ASCII numbers. Anything else (a missing or extra key, ranks in another
# order, odd spacing) does not match and goes through parse_line, so the two never disagree.
# As pieces, each a tuple of alternatives ("" for an optional piece); a group named after a column
# captures it. FAST tries every alternative; a file's first Decode line picks its layout's alternative of
# each piece for a pattern with none left to try (specialise), which reads ~2x faster.
_PREFIX = 4  # the first four pieces are the "[time ranks] " prefix, optional as a whole in FAST
_PIECES: tuple[tuple[str, ...], ...] = (
    (r"\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)",),
    (rf" DP(?P<dp_rank>{_INT})", ""),
    (rf" TP(?P<tp_rank>{_INT})", ""),
    (r"(?: (?:PP|EP)\d{1,15})*\] ",),
    (r"Decode batch\.", "Decode batch,", rf"Decode batch \[(?P<iter>{_INT})\],"),
    (
        rf" #running-req: (?P<running_req>{_INT}), #token: (?P<tokens>{_INT}), "
        rf"token usage: (?P<token_usage>{_DEC})0*+, ",
    ),
    (rf"accept len: (?P<accept_len>{_DEC})0*+, ", ""),
    (rf"accept rate: (?P<accept_rate>{_DEC})0*+, ", ""),
    (rf"cap len: {_ANY_DEC}, ", ""),
    (rf"block accept len: {_ANY_DEC}, ", ""),
    (r"[a-z]{1,10} graph: (?P<graph>True|False), ", ""),
    (rf"gen throughput \(token/s\): (?P<gen_throughput>{_DEC})0*+, #queue-req: (?P<queue_req>{_INT})",),
    (
        r", est\. decode TFLOPS/s \(per GPU\): \d+\.\d+, est\. read BW \(GB/s per GPU\): \d+\.\d+, "
        r"est\. write BW \(GB/s per GPU\): \d+\.\d+",
        "",
    ),
    (", ", ""),
)


def _pattern(piece: Callable[[int, tuple[str, ...]], str], prefix: Callable[[str], str]) -> re.Pattern[bytes]:
    """The whole-line pattern, piece i written as piece(i, its alternatives), the prefix as prefix(text).

    Bytes: ASCII only, a Unicode digit is no digit here (parse_line reads it; a CSV cell is the ASCII repr)."""
    parts = [piece(i, alternatives) for i, alternatives in enumerate(_PIECES)]
    return re.compile(rf"^{prefix(''.join(parts[:_PREFIX]))}{''.join(parts[_PREFIX:])}\n".encode(), re.MULTILINE)


FAST = _pattern(lambda _i, alternatives: f"(?:{'|'.join(alternatives)})", lambda text: f"(?:{text})?")
# FAST, saying which alternative of each piece matched (group a<piece>_<alternative>)
_DETECT = _pattern(
    lambda i, alternatives: f"(?:{'|'.join(f'(?P<a{i}_{j}>{a})' for j, a in enumerate(alternatives))})",
    lambda text: f"(?:{text})?",
)


class _Memo(dict[bytes, Any]):
    """bytes -> convert(bytes), for columns with few distinct values (ranks, counts of requests, 2-decimal
    ratios): a dict lookup is ~3x cheaper than int()/float(). Cleared when large, so memory stays bounded."""

    def __init__(self, convert: Callable[[bytes], Any]) -> None:
        super().__init__()
        self.convert = convert

    def __missing__(self, text: bytes) -> Any:
        if len(self) > 4096:
            self.clear()
        value = self[text] = self.convert(text)
        return value


_FEW_INTS, _FEW_FLOATS, _FEW_TEXTS = _Memo(int), _Memo(float), _Memo(bytes.decode)
# How each FAST column becomes the value parse_line gives it (never called on an absent group).
_CONVERT: dict[str, Callable[[bytes], Any]] = {
    "time": _FEW_TEXTS.__getitem__,
    "graph": _FEW_TEXTS.__getitem__,
    "iter": int,
    "tokens": int,
    "gen_throughput": float,
    "dp_rank": _FEW_INTS.__getitem__,
    "tp_rank": _FEW_INTS.__getitem__,
    "running_req": _FEW_INTS.__getitem__,
    "queue_req": _FEW_INTS.__getitem__,
    "token_usage": _FEW_FLOATS.__getitem__,
    "accept_len": _FEW_FLOATS.__getitem__,
    "accept_rate": _FEW_FLOATS.__getitem__,
}
_EMPTY_ROW = dict.fromkeys(COLUMNS)  # parse_line's key order; columns a line lacks stay None


def _fast(pattern: re.Pattern[bytes]) -> chunked.FastPattern:
    """The fast path of a pattern whose groups are named after columns.

    Columns it lacks become empty groups at its end, so that each match has a cell for every column."""
    present = tuple(sorted(pattern.groupindex, key=pattern.groupindex.__getitem__))
    lacking = "".join(f"(?P<{name}>)" for name in COLUMNS if name not in pattern.groupindex)
    pattern = re.compile(pattern.pattern + lacking.encode(), pattern.flags)
    cells = operator.itemgetter(*(pattern.groupindex[name] - 1 for name in COLUMNS))
    converts = tuple(_CONVERT[name] for name in present)
    if len(present) == len(COLUMNS):  # FAST: absent optional groups are "" and stay None

        def row(groups: tuple[bytes, ...]) -> dict[str, object]:
            return _EMPTY_ROW | {
                name: convert(value) for name, convert, value in zip(present, converts, groups, strict=True) if value
            }
    else:  # every group of the layout matched: convert all, in C
        pick = operator.itemgetter(*range(len(present)))  # its groups come first

        def row(groups: tuple[bytes, ...]) -> dict[str, object]:
            made = _EMPTY_ROW.copy()
            made.update(zip(present, map(operator.call, converts, pick(groups)), strict=True))
            return made

    return chunked.FastPattern(pattern, row, cells)


@functools.cache
def _specialised(layout: tuple[int, ...]) -> chunked.FastPattern:
    """FAST with alternative layout[i] of piece i and the prefix required: the same rows for its lines."""
    return _fast(_pattern(lambda i, alternatives: alternatives[layout[i]], lambda text: text))


def specialise(line: bytes) -> chunked.FastPattern | None:
    """The pattern of the layout of line (a FAST line), or None when it has no "[time ranks] " prefix."""
    detected = _DETECT.match(line)
    if detected is None or detected["time"] is None:  # prefix-less lines are rare: FAST reads them
        return None
    groups = detected.groupdict()
    return _specialised(
        tuple(
            next(j for j in range(len(alternatives)) if groups[f"a{i}_{j}"] is not None)
            for i, alternatives in enumerate(_PIECES)
        )
    )


CHUNKED = chunked.ChunkedFormat(
    marker_line=re.compile(rb"^[^\n]*Decode batch[^\n]*\n", re.MULTILINE),
    classify=_classify,
    parse_line=_parse_marked_line,
    fast=_fast(FAST),
    specialise=specialise,
    marker=b"Decode batch",
)


def parse_line(line: str) -> dict[str, object] | None:
    marker = MARKER.search(line)
    if marker is None:
        return None
    fields = simple_key_values(line[marker.end() :])  # SGLang values hold no ', '
    throughput = number(fields.get("gen throughput (token/s)"))
    if throughput is None:  # every version has it: without it this is not a Decode batch line
        return None
    row: dict[str, object] = dict.fromkeys(COLUMNS)
    if prefix := PREFIX.search(line[: marker.start()]):
        row["time"] = prefix[1]
        ranks = {name: int(value) for name, value in RANK.findall(prefix[2])}
        row.update(dp_rank=ranks.get("DP"), tp_rank=ranks.get("TP"))
    graph = next((v for k, v in fields.items() if k.endswith(" graph")), None)
    row.update(
        iter=int(marker[1]) if marker[1] else None,
        running_req=integer(fields.get("#running-req")),
        queue_req=integer(fields.get("#queue-req")),
        tokens=integer(fields.get("#token", fields.get("#full token"))),
        token_usage=number(fields.get("token usage", fields.get("full token usage"))),
        accept_len=number(fields.get("accept len")),
        accept_rate=number(fields.get("accept rate")),
        gen_throughput=throughput,
        graph=graph,
    )
    return row


LOG_FORMAT = LogFormat("sglang", parse, COLUMNS, per_request=PER_REQUEST, chunked=CHUNKED)
