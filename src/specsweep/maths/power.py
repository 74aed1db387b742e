"""How much a sweep can tell: the smallest speedup its design detects, before and after measuring.

A comparison against the baseline is the t-test of analyse/replicates.py: the difference of mean log
session rates over ``se = sigma·√(1/S_c + 1/S_b)``, against Student's t with the pooled spread's df.
Under a true log speedup δ that statistic is noncentral t with noncentrality δ/se, so the power of the
two-sided test at level a is ``P(T > t_c) + P(T < -t_c)``, t_c = t(1 - a/2, df), exactly.

Multiplicity: Holm's first step tests at alpha/m (m comparisons against one baseline), and a
configuration that alone differs is rejected at that step or not at all (a later step needs a false
positive first), so the power at alpha/m is Holm's power for it, up to that small term (the
simulation in benchmarks/power.py measures both). The smallest detectable difference is the δ where
that power reaches 80 %; "±x %" quotes exp(δ) - 1.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from specsweep.maths import stats

if TYPE_CHECKING:
    import pandas as pd

POWER = 0.80


def power(log_ratio: float, se: float, df: float, comparisons: int, alpha: float = stats.ALPHA) -> float:
    """Probability that a true ``log_ratio`` is declared significant at Holm's first step (alpha/comparisons)."""
    t = stats._scipy_stats()
    critical = float(t.t.ppf(1 - alpha / (2 * max(1, comparisons)), df))
    shift = abs(log_ratio) / se
    # the far tail underflows to NaN in scipy's noncentral t (1.17, shift 8 at 6 df): it is 0
    far = float(t.nct.cdf(-critical, df, shift))
    return float(t.nct.sf(critical, df, shift)) + (0.0 if math.isnan(far) else far)


def detectable(se: float, df: float, comparisons: int, target: float = POWER, alpha: float = stats.ALPHA) -> float:
    """The smallest log speedup detected with probability ``target``; NaN when no test is possible."""
    if not df or not se > 0 or math.isnan(se):
        return math.nan
    from scipy.optimize import brentq

    high = se
    while power(high, se, df, comparisons, alpha) < target:  # power rises with the shift: bracket, then solve
        high *= 2
    return float(brentq(lambda d: power(d, se, df, comparisons, alpha) - target, 0.0, high, xtol=1e-10))


def detectable_pct(
    sd: float, sessions: int, baseline_sessions: int, df: float, comparisons: int, target: float = POWER
) -> float:
    """``detectable`` as a percentage speedup, for a design of ``sessions`` per candidate and
    ``baseline_sessions`` for the baseline, with a pooled log-scale spread ``sd`` on ``df`` degrees of freedom."""
    se = sd * math.sqrt(1 / sessions + 1 / baseline_sessions)
    return 100 * math.expm1(detectable(se, df, comparisons, target))


def sessions_needed(target_pct: float, sd: float, configurations: int, comparisons: int, most: int = 100) -> int | None:
    """Sessions per configuration (every one alike, df = configurations·(S - 1)) for which a speedup of
    ``target_pct`` is detected with 80 % power after the family's correction; None beyond ``most``."""
    for sessions in range(2, most + 1):
        found = detectable_pct(sd, sessions, sessions, configurations * (sessions - 1), comparisons)
        if found <= target_pct:
            return sessions
    return None


# summary.csv's columns of it (aggregate.COLUMNS, docs/summary.md)
SUMMARY_COLUMNS: dict[str, str] = {
    "detectable_pct": "smallest speedup (±, %) this row's comparison detects with 80 % power after Holm's "
    "correction over its comparisons, from the measured pooled spread: differences below it cannot be told "
    "apart by this sweep (empty for a baseline and when no test was possible)",
    "detect_target_pct": "benchmark.detect_pct, the speedup the sweep should detect",
    "sessions_for_target": "sessions per configuration that would detect detect_target_pct with 80 % power after "
    "Holm's correction, at the measured session spread (empty unless sessions are the unit; more than 100: empty)",
}


def standard_error(low: float, high: float, df: float) -> float:
    """A comparison's standard error read back from its 95 % interval exp(Δ ± t·se) on ``df`` degrees of freedom
    (NaN without an interval)."""
    return math.log(high / low) / (2 * stats.t_critical(df)) if df and low > 0 and high > 0 else math.nan


def session_sd(se: float, sessions: float, baseline_sessions: float) -> float:
    """The session spread a comparison of ``sessions`` against ``baseline_sessions`` had from its standard error."""
    return se / math.sqrt(1 / sessions + 1 / baseline_sessions)


def summary_columns(frame: pd.DataFrame, detect_pct: float | None) -> pd.DataFrame:
    """summary.csv with SUMMARY_COLUMNS appended, each comparison's standard error read back from its 95 % interval
    (exp(Δ ± t·se) on ``ci_df`` degrees of freedom: the one the test used)."""
    frame = frame.copy()
    sessions = dict(zip(frame["configuration"], frame["sessions"], strict=True))
    measured = int((frame["sessions"] > 0).sum())
    found: dict[str, list[float | None]] = {column: [] for column in SUMMARY_COLUMNS}
    for row in frame.itertuples(index=False):
        df, low, high = (
            float(row.ci_df or 0),
            float(row.speedup_ci95_low or "nan"),
            float(row.speedup_ci95_high or "nan"),
        )
        se = standard_error(low, high, df)
        comparisons = int(row.comparisons) if row.comparisons == row.comparisons and row.comparisons else 1
        smallest = detectable(se, df, comparisons)
        needed = None
        if detect_pct is not None and not math.isnan(smallest) and row.interval_unit == "session":
            sd = session_sd(se, row.sessions, sessions[row.compared_with])
            needed = sessions_needed(detect_pct, sd, measured, comparisons)
        found["detectable_pct"].append(None if math.isnan(smallest) else 100 * math.expm1(smallest))
        found["detect_target_pct"].append(detect_pct)
        found["sessions_for_target"].append(needed)
    for column, values in found.items():
        frame[column] = values
    return frame


def conclusion_lines(rows: list[dict[str, str]]) -> list[str]:
    """The conclusion's line from summary.csv's rows (strings, as conclusion.py reads them): the smallest
    detectable speedup of the sweep's comparisons and the sessions benchmark.detect_pct needs."""
    found = [(_float(r, "detectable_pct"), _float(r, "comparisons"), r) for r in rows]
    found = [(d, m, r) for d, m, r in found if not math.isnan(d)]
    if not found:
        return []
    low, high = min(d for d, _, _ in found), max(d for d, _, _ in found)
    family = max(m for _, m, _ in found)
    text = (
        f"  detectable: differences below ±{high:.1f} % cannot be told apart by this sweep"
        if high - low < 0.05
        else f"  detectable: differences below ±{low:.1f} to ±{high:.1f} % cannot be told apart by this sweep"
    )
    text += f" (80 % power after Holm over {family:.0f} comparisons)"
    target = max((_float(r, "detect_target_pct") for _, _, r in found), default=math.nan)
    if not math.isnan(target) and high > target:
        sessions = max(_float(r, "sessions_for_target") for _, _, r in found)
        if found[0][2].get("interval_unit") != "session":
            text += f"; ±{target:g} % (benchmark.detect_pct) needs benchmark.sessions >= 2 to be judged"
        else:
            needed = "more than 100" if math.isnan(sessions) else f"{sessions:.0f}"
            text += f"; ±{target:g} % (benchmark.detect_pct) needs {needed} sessions per configuration"
    return [text]


def _float(row: dict[str, str], column: str) -> float:
    try:
        return float(row.get(column) or "nan")
    except ValueError:
        return math.nan
