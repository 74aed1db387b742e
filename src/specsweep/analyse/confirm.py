"""A confirmed winner: the sweep's choice measured again in fresh sessions that played no part in choosing it.

The sessions that choose the fastest configuration also estimate its speedup, and the choice favours the
configurations whose sessions happened to run fast: among 20 configurations the chosen one's speedup is
overstated by a few percent (benchmarks/winner.py measures it). With ``benchmark.confirm_sessions: N``, once
summary.csv names its choice, the winner and its baseline are each measured in N more sessions
(``<name>-c<k>``, plan/design.py), in rounds, each round in a seeded random order; the published speedup and its
interval come from those 2N sessions alone (their own pooled spread, ``N - 1`` degrees of freedom each), which
no selection touched: one pre-stated comparison, so no multiplicity correction either.

What is confirmed (``choose``): the configuration the conclusion calls best (conclusion.best) where one is
declared; else the leading candidate, the fastest configuration that is not a baseline, compared on its
baseline's machine and uncontended: fresh sessions can still show it faster, and a user who takes the top of
the table takes that one. Nothing is confirmed without a baseline or a candidate.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from specsweep.analyse import conclusion, replicates
from specsweep.analyse.replicates import Comparison
from specsweep.maths import power
from specsweep.measure.rate_check import kept_and_excluded
from specsweep.plan.design import confirmation_name
from specsweep.record.atomic import read_json, write_json
from specsweep.record.results import Run

Row = dict[str, str]

# confirmation.csv, one row: what was confirmed and against what, from which sessions, with which result
COLUMNS = {
    "configuration": "the configuration confirmed: the declared best, else the leading candidate (declared says which)",
    "baseline": "the baseline it is compared with",
    "declared": "True where the sweep declared it best (conclusion.best), False for the leading candidate",
    "chosen_speedup": "its speedup in summary.csv, from the sessions that chose it (biased upward by the choice)",
    "sessions": "fresh sessions with counted runs of the one of the two with fewer (benchmark.confirm_sessions each)",
    "speedup": "the speedup from the fresh sessions alone: the published one",
    "speedup_ci95_low": "its 95 % interval (log scale; the fresh sessions' spread pooled with the choosing "
    "sessions' of summary.csv's interval of the choice), lower end",
    "speedup_ci95_high": "upper end",
    "speedup_p_value": "two-sided t-test of speedup = 1 on the fresh sessions (one comparison: no adjustment)",
    "ci_df": "degrees of freedom of that spread: the fresh sessions' plus the choosing sessions'",
}


@dataclass(frozen=True)
class Choice:
    """What the confirmation sessions measure again."""

    configuration: str
    baseline: str
    declared: bool
    chosen_speedup: float
    # the choosing sessions' log-scale spread and its degrees of freedom (summary.csv's interval of the choice),
    # pooled into the confirmation's: one fresh session each then gets an interval
    spread_sd: float = math.nan
    spread_df: float = 0.0


def choose(rows: list[Row]) -> Choice | None:
    """The declared best, else the leading candidate (module doc); None when there is nothing to confirm."""
    measured = [r for r in rows if conclusion.is_measured(r)]
    baselines = [r["configuration"] for r in measured if r.get("baseline") == "True"]
    if not baselines:
        return None
    declared = conclusion.best(measured)
    chosen = declared or max(
        (r for r in conclusion.candidates(measured) if r["configuration"] not in baselines),
        key=lambda r: conclusion.number(r, "decode_tok_s_mean"),
        default=None,
    )
    if chosen is None:
        return None
    baseline = chosen.get("compared_with") or baselines[0]
    return Choice(
        chosen["configuration"],
        baseline,
        declared is not None,
        conclusion.number(chosen, "speedup"),
        *_spread(chosen, measured, baseline),
    )


def _spread(chosen: Row, rows: list[Row], baseline: str) -> tuple[float, float]:
    """The session spread and its degrees of freedom the choice's summary interval rests on ((NaN, 0): none)."""
    df = conclusion.number(chosen, "ci_df")
    if chosen.get("interval_unit") != replicates.SESSION or not df > 0:
        return math.nan, 0.0
    # an interval from the choice's or its baseline's own spread (Welch) is not on ci_df's pooled spread
    compared = {chosen["configuration"], baseline}
    if any(replicates.OWN_SPREAD_NOTE in r.get("warnings", "") for r in rows if r["configuration"] in compared):
        return math.nan, 0.0
    se = power.standard_error(
        conclusion.number(chosen, "speedup_ci95_low"), conclusion.number(chosen, "speedup_ci95_high"), df
    )
    sessions = {r["configuration"]: conclusion.number(r, "sessions") for r in rows}
    sd = power.session_sd(se, sessions[chosen["configuration"]], sessions.get(baseline, math.nan))
    return (sd, df) if math.isfinite(sd) else (math.nan, 0.0)


def write_choice(choice: Choice | None, path: str | Path) -> None:
    """The checkpoint's record of the choice (``{}``: nothing to confirm), which names the sessions to measure."""
    write_json(path, asdict(choice) if choice is not None else {})


def read_choice(path: str | Path) -> Choice | None:
    found = read_json(path)
    return Choice(**found) if found else None


def sessions_of(choice: Choice | None, sessions: int) -> list[str]:
    """The confirmation sessions a choice needs: the winner's and its baseline's, round by round."""
    if choice is None:
        return []
    return [
        confirmation_name(name, k) for k in range(1, sessions + 1) for name in (choice.configuration, choice.baseline)
    ]


def confirmed_runs(choice: Choice, sessions: int, runs: Mapping[str, list[Run]]) -> tuple[Comparison, int]:
    """``confirmed`` from the runs of every configuration-instance (``load_runs``), excluded runs left out, and
    the sessions with counted runs of the side with fewer."""
    fresh = [
        [kept_and_excluded(runs.get(confirmation_name(name, k), []))[0] for k in range(1, sessions + 1)]
        for name in (choice.configuration, choice.baseline)
    ]
    spread = (choice.spread_sd, choice.spread_df)
    return confirmed(*fresh, spread), min(sum(1 for session in side if session) for side in fresh)


def confirmed(
    winner: Sequence[Sequence[Run]], baseline: Sequence[Sequence[Run]], spread: tuple[float, float] = (math.nan, 0)
) -> Comparison:
    """The winner's speedup over its baseline from their fresh sessions only (each a list of runs), paired on
    the prompts both measured."""
    shared = replicates.common_prompts(*winner, *baseline)
    unit = replicates.SESSION
    return confirmed_rates(replicates.units(winner, unit, shared), replicates.units(baseline, unit, shared), spread)


def confirmed_rates(
    winner: Sequence[float], baseline: Sequence[float], spread: tuple[float, float] = (math.nan, 0)
) -> Comparison:
    """``confirmed`` on the sessions' workload rates: the t interval and test on their pooled log-scale spread,
    pooled with ``spread`` (the choosing sessions' spread and its degrees of freedom, ``Choice``) where there is
    one. The estimate is the fresh sessions' alone; the spread may come from the choosing sessions, since the
    choice selects on means, which leave the spread about them untouched: one fresh session each then gets an
    interval (without any spread: the ratio alone)."""
    fresh_sd, fresh_df = replicates.pooled_sd([winner, baseline])
    parts = [(sd, df) for sd, df in ((fresh_sd, fresh_df), spread) if df]
    df = sum(df for _, df in parts)
    sd = math.sqrt(sum(sd**2 * df for sd, df in parts) / df) if df else math.nan
    return replicates.compare_rates(winner, baseline, replicates.Pooled(replicates.SESSION, sd, df))


def write(choice: Choice | None, result: Comparison | None, sessions: int, path: str | Path) -> None:
    """confirmation.csv: the header alone when nothing was confirmed."""
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COLUMNS))
        writer.writeheader()
        if choice is not None and result is not None:
            writer.writerow(
                {
                    **{key: value for key, value in asdict(choice).items() if key in COLUMNS},
                    "sessions": sessions,
                    "speedup": result.ratio,
                    "speedup_ci95_low": result.ci_low,
                    "speedup_ci95_high": result.ci_high,
                    "speedup_p_value": result.p_value,
                    "ci_df": result.df,
                }
            )


def conclusion_lines(path: str | Path) -> list[str]:
    """The conclusion's line on the confirmation, from confirmation.csv."""
    rows = conclusion.read(path)
    if not rows:
        return ["  confirmed: nothing to confirm (no baseline, or no configuration beside it)"]
    row = rows[0]
    what = "best" if row["declared"] == "True" else "leading candidate (not declared best)"
    low, high = conclusion.number(row, "speedup_ci95_low"), conclusion.number(row, "speedup_ci95_high")
    interval = "no CI: one session each" if math.isnan(low) else f"95 % CI {low:.2f}-{high:.2f}"
    return [
        f"  confirmed in {row['sessions']} fresh sessions: {row['configuration']} ({what}) "
        f"{conclusion.number(row, 'speedup'):.2f}x over {row['baseline']} ({interval}; "
        f"the sweep's own sessions said {conclusion.number(row, 'chosen_speedup'):.2f}x)"
    ]


def plan_lines(sessions: int) -> list[str]:
    """What the plan says of ``benchmark.confirm_sessions`` (nothing when off)."""
    if not sessions:
        return []
    return [
        f"Confirmation: after the summary, {2 * sessions} more sessions (benchmark.confirm_sessions: {sessions} of "
        f"the chosen configuration and {sessions} of its baseline), not in the estimate above"
    ]
