"""The plain conclusion printed at the end of a run: best configuration, significant differences, noisy
configurations, where the files are. Read from summary.csv alone, so it says exactly what the table says.

It runs in Snakemake's own process (``onsuccess``), so it reads the CSV with the standard library:
importing pandas there would add half a second to every invocation.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

from specsweep.analyse.replicates import FEW_SESSIONS_NOTE, NOT_ESTIMABLE_NOTE, ONE_SESSION_NOTE, OWN_SPREAD_SESSIONS
from specsweep.maths import power
from specsweep.maths.stats import ALPHA, CV_WARNING
from specsweep.measure.claim import REMEASURED
from specsweep.measure.placement import CROSS_MACHINE
from specsweep.plan.config_errors import user_command
from specsweep.record.rates import SINGLE_REQUEST_DECODE

Row = dict[str, str]


def number(row: Row, column: str) -> float:
    try:
        return float(row.get(column) or "nan")
    except ValueError:
        return math.nan


def is_measured(row: Row) -> bool:
    return row.get("status", "ok") == "ok" and not math.isnan(number(row, "decode_tok_s_mean"))


def _interval(row: Row, stem: str, spec: str, name: str = "95 % CI") -> str:
    low, high = number(row, f"{stem}_low"), number(row, f"{stem}_high")
    return "no CI" if math.isnan(low) or math.isnan(high) else f"{name} {low:{spec}}-{high:{spec}}"


def noisy(row: Row) -> str | None:
    """Why a configuration's numbers are shaky (no interval possible, CV above the limit), or None. The CV is
    the launch-to-launch one, else the within-session one of a prompt's repeated runs (docs/summary.md)."""
    cv = number(row, "decode_tok_s_cv")
    if not math.isnan(cv) and cv > CV_WARNING:
        return f"CV {100 * cv:.1f} % > {100 * CV_WARNING:.0f} %"
    if math.isnan(number(row, "decode_tok_s_ci95_low")):
        return "noise not estimable: no CI" if math.isnan(cv) else "no CI"
    return None


NOT_JUDGED = "(2 sessions, whose spread has 1 degree of freedom; benchmark.sessions >= 3)"


def not_judged(row: Row) -> bool:
    """Whether 'noisy' could not be judged: 2 sessions (one degree of freedom) and no within-session spread."""
    return number(row, "sessions") == 2 and math.isnan(number(row, "decode_tok_s_cv")) and not noisy(row)


def _sessions_line(measured: list[Row]) -> str | None:
    """How many sessions the intervals rest on, and whether they ignore launch-to-launch variation."""
    counts = sorted({int(number(r, "sessions")) for r in measured if not math.isnan(number(r, "sessions"))})
    if not counts:
        return None
    unit = next((r.get("interval_unit") for r in measured if r.get("interval_unit")), "")
    shown = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    if unit == "session":
        few = f"; {FEW_SESSIONS_NOTE}" if counts[0] < OWN_SPREAD_SESSIONS else ""
        return f"  sessions: {shown} per configuration, the replicates of every interval and test{few}"
    if unit == "pass":
        return f"  sessions: {shown} per configuration: the intervals are within one launch (per pass)"
    return f"  sessions: {shown} per configuration: {NOT_ESTIMABLE_NOTE} (benchmark.sessions)"


def lines(rows: list[Row], results: str = "results", config_files: Sequence[str] = ()) -> list[str]:
    """The conclusion, one line per finding; the commands it prints carry ``config_files`` (the sweep's
    --configfile values), so they act on these results and not on the default sweep."""
    measured = [r for r in rows if is_measured(r)]
    # Crossed factors may make several baselines; each configuration's speedup is against its own.
    baselines = [r for r in measured if r.get("baseline") == "True"]
    out = [f"specsweep: {len(measured)} of {len(rows)} configurations measured"]
    if not measured:
        return [*out, f"  files: {results}/summary.csv"]
    if (sessions := _sessions_line(measured)) is not None:
        out.append(sessions)
    if baselines:
        listed = "; ".join(
            f"{b['configuration']}, {SINGLE_REQUEST_DECODE.quote(number(b, 'decode_tok_s_mean'))} "
            f"({_interval(b, 'decode_tok_s_ci95', '.1f')})"
            for b in baselines
        )
        out.append(f"  baseline{'s' if len(baselines) > 1 else ''}: {listed}")
    touched = contended(measured)
    # no winner is declared from contended runs
    judged = [r for r in measured if not _touched_by(r, touched, [b["configuration"] for b in baselines])]
    if not judged:
        out.append("  best: not declared: every comparison rests on contended runs")
        return [
            *out,
            *contention_lines(touched),
            *energy_lines(measured, None),
            *_closing_lines(rows, results, config_files),
        ]
    # a ratio to a baseline measured on another machine is no speedup: listed apart, never best, faster or slower
    across = [r["configuration"] for r in judged if r not in baselines and _cross_machine(r)]
    comparable = [r for r in judged if r in baselines or not _cross_machine(r)]
    out.append(_best_line(comparable or judged, baselines))
    others = [r for r in comparable if r not in baselines]
    if any(r.get("interval_unit") == "pass" for r in others):  # within-launch tests declare nothing
        out.append(f"  differences: {ONE_SESSION_NOTE}")
        return [*out, *_closing(rows, results, config_files, measured, judged, touched)]
    out.extend(_rounds_lines(others) if has_rounds(others) else _one_look_lines(others))
    out.extend(power.conclusion_lines(others))
    if across:
        out.append(f"  baseline measured on another machine (no speedup claimed): {', '.join(across)}")
    return [*out, *_closing(rows, results, config_files, measured, judged, touched)]


def _one_look_lines(others: list[Row]) -> list[str]:
    """The verdicts of the test of every session measured, its number fixed in advance."""
    faster = [_change(r) for r in others if r.get("significant") == "True" and number(r, "speedup") > 1]
    slower = [_change(r) for r in others if r.get("significant") == "True" and number(r, "speedup") < 1]
    unclear = [r["configuration"] for r in others if r.get("significant") != "True"]
    family = max((number(r, "comparisons") for r in others), default=math.nan)
    tests = f"Holm-adjusted p < 0.05 over {family:.0f} comparisons" if not math.isnan(family) else "p < 0.05"
    return [
        f"  significantly faster than the baseline ({tests}): {', '.join(faster) or 'none'}",
        f"  significantly slower: {', '.join(slower) or 'none'}",
        f"  no demonstrated difference (or no test possible): {', '.join(unclear) or 'none'}",
    ]


def sequential_verdict(row: Row) -> str:
    """summary.csv's repeated verdict of the rounds (benchmark.sessions {min, max}); "" without one."""
    found = row.get("sequential_verdict") or ""
    return "" if found == "nan" else found  # a row pandas wrote back (report/paper.py)


def has_rounds(rows: list[Row]) -> bool:
    """Whether the sessions came in rounds: then the repeated verdicts are the valid ones."""
    return any(sequential_verdict(r) for r in rows)


def best_interval(rows: list[Row]) -> str:
    """The interval the best is quoted with (its columns' stem): the rounds' repeated one, valid wherever they
    stopped; else the simultaneous one over the family, as it was selected by its own noise."""
    return "sequential_ci95" if has_rounds(rows) else "speedup_sim95"


def _rounds_lines(others: list[Row]) -> list[str]:
    """The repeated verdicts of the rounds (summary.csv sequential_*), each with the session it was decided at."""

    def said(verdict: str, change: bool = True) -> str:
        found = [
            f"{_change(r) if change else r['configuration']} at {number(r, 'decided_at_session'):.0f} sessions"
            for r in others
            if sequential_verdict(r) == verdict
        ]
        return ", ".join(found) or "none"

    family = max((number(r, "comparisons") for r in others), default=math.nan)
    margin = max((number(r, "detect_target_pct") for r in others), default=math.nan)
    still = [r["configuration"] for r in others if sequential_verdict(r) in ("open", "")]
    return [
        f"  significantly faster than the baseline (repeated tests over the rounds, Holm over {family:.0f} "
        f"comparisons; valid wherever the rounds stopped): {said('faster')}",
        f"  significantly slower: {said('slower')}",
        f"  shown equivalent within ±{margin:g} % (benchmark.detect_pct): {said('equivalent', change=False)}",
        f"  still open at the last session (no demonstrated difference): {', '.join(still) or 'none'}",
    ]


def _closing(
    rows: list[Row],
    results: str,
    config_files: Sequence[str],
    measured: list[Row],
    judged: list[Row],
    touched: dict[str, str],
) -> list[str]:
    """The lines after the verdicts: noisy configurations, contention, energy, files."""
    shaky = [f"{r['configuration']} ({reason})" for r in measured if (reason := noisy(r))]
    unjudged = [r["configuration"] for r in measured if not_judged(r)]
    fastest = max(judged, key=lambda r: number(r, "decode_tok_s_mean"))
    return [
        f"  noisy: {', '.join(shaky) or 'none'}",
        *([f"  noisy not judged {NOT_JUDGED}: {', '.join(unjudged)}"] if unjudged else []),
        *contention_lines(touched),
        *energy_lines(judged, fastest),
        *_closing_lines(rows, results, config_files),
    ]


def _closing_lines(rows: list[Row], results: str, config_files: Sequence[str]) -> list[str]:
    """What every conclusion ends with, whatever it could judge: re-measured and unmeasured configurations,
    and where the files are."""
    out = []
    remeasured = [r["configuration"] for r in rows if is_measured(r) and REMEASURED in (r.get("warnings") or "")]
    if remeasured:  # a node failed under an earlier attempt (docs/cluster.md, Node failure)
        out.append(f"  {REMEASURED} (an earlier attempt was lost: warnings in summary.csv): {', '.join(remeasured)}")
    failed = [f"{r['configuration']} ({r.get('status')})" for r in rows if not is_measured(r)]
    if failed:
        out.append(f"  not measured: {', '.join(failed)}")
    out.append(
        f"  files: {results}/summary.csv (one row per configuration, columns in docs/summary.md), "
        f"{results}/runs.csv, {results}/figures/, {results}/paper/; an HTML report: "
        f"{user_command(f'--report {results}/report.html', config_files)}"
    )
    return out


def best(measured: list[Row]) -> Row | None:
    """The configuration the conclusion and the paper call best: the fastest that is significantly faster
    than its baseline (Holm), measured on its baseline's machine, neither of them contended; else None.
    The fastest is selected by its own noise, so it is quoted with its simultaneous interval
    (speedup_sim95_*), and named only where that interval excludes 1: Holm's step-down declares some the
    Bonferroni interval does not, and the verdict and the quoted interval must say the same."""
    if has_rounds(measured):  # after stopping early only the repeated verdict is valid (it implies its interval > 1)
        faster = [r for r in candidates(measured) if sequential_verdict(r) == "faster"]
    else:
        faster = [
            r
            for r in candidates(measured)
            if r.get("significant") == "True"
            and number(r, "speedup") > 1
            and not number(r, "speedup_sim95_low") <= 1.0  # NaN (no interval): Holm's verdict alone
        ]
    return max(faster, key=lambda r: number(r, "decode_tok_s_mean"), default=None)


def candidates(measured: list[Row]) -> list[Row]:
    """The configurations a winner may be: measured on their baseline's machine, neither of them contended."""
    touched = contended(measured)  # no winner from contended runs, or against a contended baseline
    baselines = [r["configuration"] for r in measured if r.get("baseline") == "True"]
    return [r for r in measured if not _cross_machine(r) and not _touched_by(r, touched, baselines)]


def _best_line(measured: list[Row], baselines: list[Row]) -> str:
    """The significantly faster configuration with the highest throughput (as the paper's Best* macros),
    else the fastest measured, said not to be shown better than its baseline."""
    chosen = best(measured) or max(measured, key=lambda r: number(r, "decode_tok_s_mean"))
    text = f"  best: {chosen['configuration']}, {SINGLE_REQUEST_DECODE.quote(number(chosen, 'decode_tok_s_mean'))} "
    if chosen in baselines:
        return text + f"({_interval(chosen, 'decode_tok_s_ci95', '.1f')}), a baseline itself: no configuration beats it"
    if not baselines:
        return text + f"({_interval(chosen, 'decode_tok_s_ci95', '.1f')})"
    if _cross_machine(chosen):
        return text + (
            f"({_interval(chosen, 'decode_tok_s_ci95', '.1f')}), but its baseline ran on another machine: the ratio "
            f"{number(chosen, 'speedup'):.2f}x is no speedup (docs/cluster.md: comparisons on one node)"
        )
    its = "its" if len(baselines) > 1 else "the"
    speedup = number(chosen, "speedup")
    text += f"({_interval(chosen, 'decode_tok_s_ci95', '.1f')}), speedup {speedup:.2f}x over {its} baseline "
    quoted = best_interval(measured)
    if has_rounds(measured):
        text += f"({_interval(chosen, quoted, '.2f', 'repeated 95 % CI')}; {_rounds_verdict(chosen)})"
        return text if best(measured) else text + ": no configuration is shown to beat its baseline"
    text += f"({_interval(chosen, quoted, '.2f', 'simultaneous 95 % CI')}; {_selected_verdict(chosen)})"
    if best(measured) is None:
        holm_only = any(r.get("significant") == "True" and number(r, "speedup") > 1 for r in measured)
        text += (
            ": none is confirmed as the best: Holm declares some faster, but no simultaneous interval excludes 1"
            if holm_only
            else ": no configuration is shown to beat its baseline"
        )
    return text


def contended(rows: list[Row]) -> dict[str, str]:
    """Configurations with runs measured under contention (summary.csv contended_runs): name -> how many."""
    return {
        r["configuration"]: f"{number(r, 'contended_runs'):.0f} of {number(r, 'runs'):.0f} runs"
        for r in rows
        if number(r, "contended_runs") > 0
    }


def _touched_by(row: Row, touched: dict[str, str], baselines: list[str]) -> bool:
    """Whether the row or the baseline it is compared with (every baseline, in a summary without
    compared_with) was contended."""
    against = [row["compared_with"]] if row.get("compared_with") is not None else baselines
    return any(name in touched for name in [row["configuration"], *against] if name)


def contention_lines(touched: dict[str, str]) -> list[str]:
    if not touched:
        return []
    listed = ", ".join(f"{name} ({runs})" for name, runs in touched.items())
    return [
        f"  CONTENDED: other processes used the machine while {listed} were measured (runs.csv contended, "
        f"docs/energy.md): no winner is declared from them or from comparisons with them; rerun on a quiet machine"
    ]


def energy_lines(rows: list[Row], fastest: Row | None) -> list[str]:
    """The most efficient configuration (output tokens per joule) beside the fastest, or why energy is not
    measured; nothing for a summary.csv written before energy was (no energy_source column)."""
    if not rows or "energy_source" not in rows[0]:
        return []
    measured = [r for r in rows if not math.isnan(number(r, "tokens_per_joule_mean"))]
    if not measured:
        return [f"  energy: {rows[0].get('energy_source') or 'not measured'}"]
    best = max(measured, key=lambda r: number(r, "tokens_per_joule_mean"))
    text = (
        f"  most efficient: {best['configuration']}, {number(best, 'tokens_per_joule_mean'):.3g} output tokens/J "
        f"({_energy_interval(best)}; {best.get('energy_source')})"
    )
    if fastest is not None and fastest["configuration"] != best["configuration"]:
        per_joule = number(fastest, "tokens_per_joule_mean")
        text += f"; the fastest, {fastest['configuration']}, gives {per_joule:.3g} tokens/J"
    elif fastest is not None:
        text += ", also the fastest"
    return [text]


def _energy_interval(row: Row) -> str:
    """tokens/J's interval, over sessions as the throughput's: with one session there is none, and why."""
    shown = _interval(row, "tokens_per_joule_ci95", ".3g")
    return "no CI: one session" if shown == "no CI" and number(row, "sessions") == 1 else shown


def _cross_machine(row: Row) -> bool:
    return CROSS_MACHINE in (row.get("warnings") or "")


def _verdict(row: Row) -> str:
    if row.get("interval_unit") == "pass":
        return "one session: nothing declared"
    p, holm = number(row, "speedup_p_value"), number(row, "speedup_p_holm")
    if math.isnan(p):
        return "no test possible"
    adjusted = f", Holm p = {holm:.2g}" if not math.isnan(holm) else ""
    return f"p = {p:.2g}{adjusted}, {'significant' if row.get('significant') == 'True' else 'not significant'}"


def _selected_verdict(row: Row) -> str:
    """The test of the quoted simultaneous interval: p x comparisons (Bonferroni), so that both say the same."""
    p, comparisons = number(row, "speedup_p_value"), number(row, "comparisons")
    if math.isnan(p) or math.isnan(comparisons) or row.get("interval_unit") == "pass":
        return _verdict(row)
    adjusted = min(1.0, p * comparisons)
    text = f"p = {p:.2g}, x {comparisons:.0f} comparisons = {adjusted:.2g} (the interval's test), "
    if adjusted < ALPHA:
        return text + "significant"
    if row.get("significant") == "True":
        return text + f"not significant as the selected best (Holm p = {number(row, 'speedup_p_holm'):.2g})"
    return text + "not significant"


def _rounds_verdict(row: Row) -> str:
    verdict = sequential_verdict(row) or "no test possible"
    decided = number(row, "decided_at_session")
    at = "" if math.isnan(decided) else f" at {decided:.0f} sessions"
    return f"repeated Holm p = {number(row, 'sequential_p_holm'):.2g}, {verdict}{at}"


def _change(row: Row) -> str:
    return f"{row['configuration']} {number(row, 'speedup_pct'):+.1f} %"


def read(summary_csv: str | Path) -> list[Row]:
    with open(summary_csv, newline="") as handle:
        return list(csv.DictReader(handle))
