"""Drift: does the machine's speed change while a sweep runs?

Two views, both in ``results/drift.csv``:

* **within a session** (every configuration): the least-squares trend of log decode tok/s over run
  order, each prompt compared with itself (one level per prompt, so a prompt's own speed is not read as
  time), as % per run, with its 95 % Student-t interval (runs - prompts - 1 degrees of freedom).
  A trend whose interval excludes 0 means the runs are not exchangeable (warm-up, thermal, a
  neighbour starting work), so the configuration's CI understates the uncertainty.
* **across the sweep** (``benchmark.order: bracket``, scheduled by ``design``): the baseline session
  is measured first and again as the last session (``<baseline>-end``), and the end/start ratio of
  means gets its 95 % Fieller interval and Welch p-value. On a shared machine the same configuration
  drifts about ±10 % between launches; a bracket shows how much of that hit this sweep.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from specsweep.maths import stats
from specsweep.plan.config import Configuration
from specsweep.plan.design import end_name
from specsweep.record.results import Run

if TYPE_CHECKING:
    import pandas as pd

COLUMNS: dict[str, str] = {
    "check": "within-session (trend over run order) or bracket (baseline at the end vs at the start)",
    "configuration": "the configuration (for a bracket: the end session)",
    "runs": "runs used",
    "estimate_pct": "within-session: trend in % per run, each prompt compared with itself (empty when no prompt "
    "ran twice); bracket: (end/start - 1) * 100",
    "ci95_low_pct": "95 % interval, lower bound (Student t on the slope; Fieller on the ratio)",
    "ci95_high_pct": "95 % interval, upper bound",
    "p_value": "two-sided p-value (slope t-test, runs - prompts - 1 degrees of freedom; Welch t-test for a bracket)",
    "drifted": "true when the interval excludes 0",
    "started_first": "UTC start of the first run considered",
    "started_last": "UTC start of the last run considered",
}


def trend(rates: Sequence[float], prompts: Sequence[int]) -> tuple[float, float, float, float]:
    """Slope of log tok/s over run order, each prompt compared with itself (least squares with one level per
    prompt), in % per run: estimate, 95 % CI, p-value. Runs cycle through the prompts, so across prompts
    the trend follows their order: a real vLLM baseline read -4 % per run (p 0.008) over 7 runs in 3.3 s,
    each a different category, its rates following the categories. NaN when no prompt ran twice or too
    few runs are left for an interval."""
    from scipy import stats as scipy_stats

    y = np.log(np.asarray(rates, dtype=float))
    x = np.arange(len(y), dtype=float)
    keys = np.asarray(prompts)
    levels = np.unique(keys)
    df = len(y) - len(levels) - 1
    if len(y) < stats.MIN_RUNS_FOR_CI or not np.isfinite(y).all():
        return math.nan, math.nan, math.nan, math.nan
    for level in levels:  # each prompt's runs around their own mean: a prompt compared with itself
        mine = keys == level
        x[mine] -= x[mine].mean()
        y[mine] -= y[mine].mean()
    sxx = float(x @ x)
    if sxx == 0 or df < 1:  # no prompt ran twice: nothing to compare
        return math.nan, math.nan, math.nan, math.nan
    slope = float(x @ y) / sxx
    residual = y - slope * x
    se = math.sqrt(float(residual @ residual) / df / sxx)
    if se == 0:
        return 100 * math.expm1(slope), math.nan, math.nan, math.nan
    half = stats.t_critical(df) * se
    p_value = float(2 * scipy_stats.t.sf(abs(slope / se), df))
    return 100 * math.expm1(slope), 100 * math.expm1(slope - half), 100 * math.expm1(slope + half), p_value


def report(configurations: dict[str, Configuration], runs: dict[str, list[Run]]) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for name in configurations:
        records = sorted(runs.get(name, []), key=lambda r: r.run)
        estimate, low, high, p = trend([r.decode_tokens_per_s for r in records], [r.prompt_index for r in records])
        rows.append(_row("within-session", name, records, estimate, low, high, p))
    baseline = next(c.name for c in configurations.values() if c.baseline)
    end = end_name(baseline)
    if end in configurations and runs.get(end) and runs.get(baseline):
        start_rates = [r.decode_tokens_per_s for r in runs[baseline]]
        end_rates = [r.decode_tokens_per_s for r in runs[end]]
        ratio = stats.ratio(end_rates, start_rates)
        rows.append(
            _row(
                "bracket",
                end,
                runs[baseline] + runs[end],
                100 * (ratio.ratio - 1),
                100 * (ratio.ci_low - 1),
                100 * (ratio.ci_high - 1),
                ratio.p_value,
            )
        )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _row(
    check: str, name: str, records: list[Run], estimate: float, low: float, high: float, p: float
) -> dict[str, Any]:
    started = sorted(r.started_at for r in records)
    return {
        "check": check,
        "configuration": name,
        "runs": len(records),
        "estimate_pct": estimate,
        "ci95_low_pct": low,
        "ci95_high_pct": high,
        "p_value": p,
        "drifted": None if math.isnan(low) else bool(low > 0 or high < 0),
        "started_first": started[0] if started else None,
        "started_last": started[-1] if started else None,
    }


def describe(frame: pd.DataFrame) -> list[str]:
    lines = [
        "drift: within-session = least-squares trend of log tok/s over run order, each prompt against itself "
        "(95 % Student t); "
        "bracket = baseline end/start ratio of means (95 % Fieller, Welch p)"
    ]
    for row in frame.itertuples():
        if math.isnan(row.ci95_low_pct):
            continue
        flag = "DRIFT" if row.drifted else "ok"
        unit = "% per run" if row.check == "within-session" else "%"
        lines.append(
            f"{flag:5} {row.check} {row.configuration}: {row.estimate_pct:+.2f} {unit} "
            f"[{row.ci95_low_pct:+.2f}, {row.ci95_high_pct:+.2f}]"
        )
    return lines
