"""The plain conclusion printed at the end of a run: best configuration, significant differences, noisy
configurations, where the files are. Read from summary.csv alone, so it says exactly what the table says.

It runs in Snakemake's own process (``onsuccess``), so it reads the CSV with the standard library:
importing pandas there would add half a second to every invocation.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from specsweep.analyse.stats import CV_WARNING, MIN_RUNS_FOR_CI
from specsweep.measure.claim import REMEASURED
from specsweep.measure.placement import CROSS_MACHINE

Row = dict[str, str]


def _number(row: Row, column: str) -> float:
    try:
        return float(row.get(column) or "nan")
    except ValueError:
        return math.nan


def _ok(row: Row) -> bool:
    return row.get("status", "ok") == "ok" and not math.isnan(_number(row, "tok_s_mean"))


def _interval(row: Row, stem: str, spec: str) -> str:
    low, high = _number(row, f"{stem}_low"), _number(row, f"{stem}_high")
    return "no CI" if math.isnan(low) or math.isnan(high) else f"95 % CI {low:{spec}}-{high:{spec}}"


def noisy(row: Row) -> str | None:
    """Why a configuration's numbers are shaky (too few runs for an interval, CV above the limit), or None."""
    runs, cv = _number(row, "runs"), _number(row, "tok_s_cv")
    if runs < MIN_RUNS_FOR_CI:
        return f"{runs:.0f} run(s): no CI"
    if not math.isnan(cv) and cv > CV_WARNING:
        return f"CV {100 * cv:.1f} % > {100 * CV_WARNING:.0f} %"
    return None


def lines(rows: list[Row], results: str = "results") -> list[str]:
    """The conclusion, one line per finding."""
    measured = [r for r in rows if _ok(r)]
    # Crossed factors may make several baselines; each configuration's speedup is against its own.
    baselines = [r for r in measured if r.get("baseline") == "True"]
    out = [f"specsweep: {len(measured)} of {len(rows)} configurations measured"]
    if not measured:
        return [*out, f"  files: {results}/summary.csv"]
    if baselines:
        listed = "; ".join(
            f"{b['configuration']}, {_number(b, 'tok_s_mean'):.1f} tok/s ({_interval(b, 'tok_s_ci95', '.1f')})"
            for b in baselines
        )
        out.append(f"  baseline{'s' if len(baselines) > 1 else ''}: {listed}")
    best = max(measured, key=lambda r: _number(r, "tok_s_mean"))
    text = (
        f"  best: {best['configuration']}, {_number(best, 'tok_s_mean'):.1f} tok/s "
        f"({_interval(best, 'tok_s_ci95', '.1f')})"
    )
    if best in baselines:
        text += ", a baseline itself: no configuration beats it"
    elif _cross_machine(best):
        text += (
            f", but its baseline ran on another machine: the ratio {_number(best, 'speedup'):.2f}x is no speedup "
            f"(docs/cluster.md: comparisons on one node)"
        )
    elif baselines:
        text += (
            f", speedup {_number(best, 'speedup'):.2f}x over {'its' if len(baselines) > 1 else 'the'} baseline "
            f"({_interval(best, 'speedup_ci95', '.2f')}; {_verdict(best)})"
        )
    out.append(text)
    # a ratio to a baseline measured on another machine is no speedup: listed apart, never as faster or slower
    across = [r["configuration"] for r in measured if r not in baselines and _cross_machine(r)]
    others = [r for r in measured if r not in baselines and not _cross_machine(r)]
    faster = [_change(r) for r in others if r.get("significant") == "True" and _number(r, "speedup") > 1]
    slower = [_change(r) for r in others if r.get("significant") == "True" and _number(r, "speedup") < 1]
    unclear = [r["configuration"] for r in others if r.get("significant") != "True"]
    out.append(f"  significantly faster than the baseline (Welch p < 0.05): {', '.join(faster) or 'none'}")
    out.append(f"  significantly slower: {', '.join(slower) or 'none'}")
    out.append(f"  no demonstrated difference (or no test possible): {', '.join(unclear) or 'none'}")
    if across:
        out.append(f"  baseline measured on another machine (no speedup claimed): {', '.join(across)}")
    shaky = [f"{r['configuration']} ({reason})" for r in measured if (reason := noisy(r))]
    out.append(f"  noisy: {', '.join(shaky) or 'none'}")
    remeasured = [r["configuration"] for r in measured if REMEASURED in (r.get("warnings") or "")]
    if remeasured:  # a node failed under an earlier attempt (docs/cluster.md, Node failure)
        out.append(f"  {REMEASURED} (an earlier attempt was lost: warnings in summary.csv): {', '.join(remeasured)}")
    failed = [f"{r['configuration']} ({r.get('status')})" for r in rows if not _ok(r)]
    if failed:
        out.append(f"  not measured: {', '.join(failed)}")
    out.append(
        f"  files: {results}/summary.csv (one row per configuration, columns in docs/summary.md), "
        f"{results}/runs.csv, {results}/figures/, {results}/paper/; an HTML report: "
        f"snakemake --report {results}/report.html"
    )
    return out


def _cross_machine(row: Row) -> bool:
    return CROSS_MACHINE in (row.get("warnings") or "")


def _verdict(row: Row) -> str:
    p = _number(row, "speedup_p_value")
    if math.isnan(p):
        return "no test possible"
    return f"p = {p:.2g}, {'significant' if row.get('significant') == 'True' else 'not significant'}"


def _change(row: Row) -> str:
    return f"{row['configuration']} {_number(row, 'speedup_pct'):+.1f} %"


def read(summary_csv: str | Path) -> list[Row]:
    with open(summary_csv, newline="") as handle:
        return list(csv.DictReader(handle))
