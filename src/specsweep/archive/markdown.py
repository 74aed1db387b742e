"""Markdown tables of a sweep read from its archive, for the README an example keeps beside the archive.

    python -m specsweep.archive.markdown ARCHIVE summary|load

A README quotes them between ``<!-- table: summary ARCHIVE -->`` and ``<!-- end table -->``; a test
regenerates every quoted table from the committed archive, so an example's numbers are the archive's
numbers. Rates are named as record/rates.py names them.
"""

from __future__ import annotations

import io
import math
import sys
from pathlib import Path

import pandas as pd

from specsweep.archive import archive
from specsweep.record.rates import SINGLE_REQUEST_DECODE, STEADY_OUTPUT

TABLES = ("summary", "load")


def archived_table(path: Path, name: str) -> pd.DataFrame:
    """``results/<name>.csv`` as the archive holds it."""
    _top, files = archive.read_members(path)
    member = f"results/{name}.csv"
    if member not in files:
        raise ValueError(f"{path}: holds no {member}")
    return pd.read_csv(io.BytesIO(files[member]))


def table(path: Path, name: str) -> str:
    if name not in TABLES:
        raise ValueError(f"unknown table {name!r}: one of {', '.join(TABLES)}")
    frame = archived_table(path, name)
    return summary_table(frame) if name == "summary" else load_table(frame)


def summary_table(summary: pd.DataFrame) -> str:
    """One row per configuration: its sessions and runs, the single-request decode rate and the speedup over the
    baseline with their 95 % intervals over sessions, the Holm-adjusted p, speculation and energy."""
    head = (
        f"| configuration | sessions x runs | {SINGLE_REQUEST_DECODE.label} (95 % CI) | speedup (95 % CI) "
        "| Holm p | acceptance | accept length | output tokens/J (95 % CI) |"
    )
    rows = [head, "|---|---|---|---|---|---|---|---|"]
    for row in summary.itertuples():
        per_session = int(row.runs) // max(int(row.sessions), 1)
        speedup = (
            "baseline" if row.baseline else _with_interval(row.speedup, row.speedup_ci95_low, row.speedup_ci95_high, 3)
        )
        cells = [
            f"`{row.configuration}`",
            f"{int(row.sessions)} x {per_session}",
            _with_interval(row.decode_tok_s_mean, row.decode_tok_s_ci95_low, row.decode_tok_s_ci95_high, 1),
            speedup,
            _number(row.speedup_p_holm, ".2g"),
            _percent(row.acceptance_rate),
            _number(row.accept_length, ".2f"),
            _with_interval(row.tokens_per_joule_mean, row.tokens_per_joule_ci95_low, row.tokens_per_joule_ci95_high, 2),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def load_table(load: pd.DataFrame) -> str:
    """One row per configuration and load level: the steady output rate and its speedup over the baseline at the
    same level with 95 % intervals, latency medians and p99s, and speculation."""
    head = (
        f"| configuration | load | replicate | {STEADY_OUTPUT.label} (95 % CI) | speedup (95 % CI) | TTFT p50 ms "
        "| TPOT p50 ms | ITL p99 ms | acceptance |"
    )
    rows = [head, "|---|---|---|---|---|---|---|---|---|"]
    for row in load.itertuples():
        speedup = (
            "baseline" if row.baseline else _with_interval(row.speedup, row.speedup_ci95_low, row.speedup_ci95_high, 3)
        )
        cells = [
            f"`{row.configuration}`",
            row.load,
            row.replicate,
            _with_interval(row.output_tok_s_mean, row.output_tok_s_ci95_low, row.output_tok_s_ci95_high, 0),
            speedup,
            _number(row.ttft_ms_p50, ".1f"),
            _number(row.tpot_ms_p50, ".2f"),
            _number(row.itl_ms_p99, ".2f"),
            _percent(row.acceptance_rate),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _number(value: object, spec: str) -> str:
    return "" if _missing(value) else format(float(value), spec)  # type: ignore[arg-type]


def _percent(value: object) -> str:
    return "" if _missing(value) else f"{100 * float(value):.1f} %"  # type: ignore[arg-type]


def _with_interval(value: object, low: object, high: object, digits: int) -> str:
    if _missing(value):
        return ""
    centre = f"{float(value):.{digits}f}"  # type: ignore[arg-type]
    if _missing(low) or _missing(high):
        return f"{centre} (no interval)"
    return f"{centre} ({float(low):.{digits}f}-{float(high):.{digits}f})"  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 2:
        print(f"usage: python -m specsweep.archive.markdown ARCHIVE {'|'.join(TABLES)}", file=sys.stderr)
        return 2
    try:
        print(table(Path(args[0]), args[1]))
    except ValueError as error:
        print(f"python -m specsweep.archive.markdown: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
