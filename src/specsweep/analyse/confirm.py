"""A confirmed winner: the sweep's choices measured again in fresh sessions that played no part in choosing them.

The sessions that choose the fastest configuration also estimate its speedup, and the choice favours the
configurations whose sessions happened to run fast: among 20 configurations the chosen one's speedup is
overstated by a few percent (benchmarks/winner.py measures it). With ``benchmark.confirm_sessions: N``, once
summary.csv (and, with ``benchmark.load``, load.csv) names the choices, every chosen configuration and its
baseline are each measured in N more sessions (``<name>-c<k>``, plan/design.py), each once however many choices
name it, in rounds, each round in a seeded random order. A confirmation session is a whole session: its
single-request runs and every load level. The published speedups and their intervals come from those sessions
alone, which no selection touched: one pre-stated comparison per choice, so no multiplicity correction either.

What is confirmed (``choose``, ``choose_levels``): for single requests, the configuration the conclusion calls
best (conclusion.best) where one is declared; else the leading candidate, the fastest configuration that is
not a baseline, compared on its baseline's machine and uncontended: fresh sessions can still show it faster,
and a user who takes the top of the table takes that one. At each load level, its best (load.csv's
``level_verdict``, analyse/loadbest.py); where the level is not resolved (or not judged: one launch), its
leading candidate, the fastest by its mean of the level's candidates that is not the baseline. A choice that is
the baseline, or that has no baseline, is nothing to confirm. benchmarks/choose.py, the simulation the
per-level choice is judged by, confirms the same way: every level's winner once and one shared baseline.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from specsweep.analyse import conclusion, loadbest, replicates
from specsweep.analyse.replicates import Comparison
from specsweep.maths import power
from specsweep.measure.rate_check import kept_and_excluded
from specsweep.plan.design import confirmation_name
from specsweep.plan.load_levels import SINGLE
from specsweep.record.atomic import read_json, write_json
from specsweep.record.results import Run, Window

Row = dict[str, str]

# confirmation.csv, one row per choice: what was confirmed and against what, from which sessions, with which result
COLUMNS = {
    "load": f"{SINGLE} (the single-request choice) or the load level of the choice, as in load.csv",
    "configuration": "the configuration confirmed: the declared best, else the leading candidate (declared says which)",
    "baseline": "the baseline it is compared with",
    "declared": "True where the sweep declared it best (single: conclusion.best; a load level: load.csv's "
    "level_verdict best), False for the leading candidate",
    "chosen_speedup": "its speedup from the sessions that chose it (biased upward by the choice): summary.csv's, "
    "or load.csv's at its level",
    "sessions": "fresh sessions of the one of the two with fewer that count (benchmark.confirm_sessions each): "
    "with counted runs (single), with windows at the level (load)",
    "speedup": "the speedup from the fresh sessions alone, each session's rate as summary.csv's (single) or "
    "load.csv's (a load level) replicate: the published one",
    "speedup_ci95_low": "its 95 % interval (log scale) on the fresh sessions' spread pooled with the choosing "
    "sessions' (read back from the choice's interval in summary.csv, or load.csv at its level, where that interval "
    "rests on sessions), lower end; empty with one fresh session each and no choosing sessions' spread",
    "speedup_ci95_high": "upper end",
    "speedup_p_value": "two-sided t-test of speedup = 1 on the fresh sessions (one comparison: no adjustment)",
    "ci_df": "degrees of freedom of that spread: the fresh sessions' plus the choosing sessions'",
}


@dataclass(frozen=True)
class Choice:
    """What the confirmation sessions measure again: one choice, single-request or at one load level."""

    configuration: str
    baseline: str
    declared: bool
    chosen_speedup: float
    load: str = SINGLE
    # the choosing sessions' log-scale spread and its degrees of freedom (read back from the choice's interval),
    # pooled into the confirmation's: one fresh session each then gets an interval
    spread_sd: float = math.nan
    spread_df: float = 0.0


@dataclass(frozen=True)
class Confirmed:
    """A choice's result: its speedup from the fresh sessions, and how many of them count (the side with fewer)."""

    choice: Choice
    result: Comparison
    sessions: int


def choices_of(summary: list[Row], load: list[Row]) -> list[Choice]:
    """Every choice to confirm: the single-request one (``choose``), then each load level's (``choose_levels``)."""
    single = choose(summary)
    return [*([single] if single is not None else []), *choose_levels(load)]


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
    sd, df = _spread(chosen, measured, baseline)
    return Choice(
        chosen["configuration"],
        baseline,
        declared is not None,
        conclusion.number(chosen, "speedup"),
        spread_sd=sd,
        spread_df=df,
    )


def choose_levels(rows: list[Row]) -> list[Choice]:
    """Each load level's choice from load.csv's rows (the module doc), in the table's order of levels."""
    levels: dict[str, list[Row]] = {}
    for row in rows:
        levels.setdefault(row["load"], []).append(row)
    return [choice for label, at_level in levels.items() if (choice := _level_choice(label, at_level)) is not None]


def _level_choice(label: str, rows: list[Row]) -> Choice | None:
    baseline = next((r for r in rows if r.get("baseline") == "True"), None)
    best = next((r for r in rows if r.get("level_verdict") == loadbest.BEST), None)
    # not resolved: its candidates; not judged (one launch): every configuration
    candidates = [r for r in rows if r.get("level_verdict") in (loadbest.OPEN, loadbest.NOT_JUDGED)]
    chosen = best or max(
        (r for r in candidates if r is not baseline and math.isfinite(conclusion.number(r, "output_tok_s_mean"))),
        key=lambda r: conclusion.number(r, "output_tok_s_mean"),
        default=None,
    )
    if baseline is None or chosen is None or chosen is baseline:
        return None
    sd, df = _level_spread(chosen, baseline)
    return Choice(
        chosen["configuration"],
        baseline["configuration"],
        best is not None,
        conclusion.number(chosen, "speedup"),
        label,
        sd,
        df,
    )


def _level_spread(chosen: Row, baseline: Row) -> tuple[float, float]:
    """The session spread and its degrees of freedom that load.csv's interval of a level's choice rests on ((NaN,
    0): none, as with the windows of one launch). That interval is paired, session k with the baseline's session
    k: its pairs are the sessions of the side with fewer, its degrees of freedom pairs - 1, and the spread of a
    pair's log ratio is √2 times a session's, which ``power.session_sd`` gives with the pairs on either side."""
    sessions = [conclusion.number(row, "sessions") for row in (chosen, baseline)]
    if chosen.get("replicate") != replicates.SESSION or not all(n >= 2 for n in sessions):
        return math.nan, 0.0
    pairs = min(sessions)
    df = pairs - 1
    se = power.standard_error(
        conclusion.number(chosen, "speedup_ci95_low"), conclusion.number(chosen, "speedup_ci95_high"), df
    )
    sd = power.session_sd(se, pairs, pairs)
    return (sd, df) if math.isfinite(sd) else (math.nan, 0.0)


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


def write_choices(choices: Sequence[Choice], path: str | Path) -> None:
    """The checkpoint's record of the choices (``[]``: nothing to confirm), which names the sessions to measure."""
    write_json(path, [asdict(choice) for choice in choices])


def read_choices(path: str | Path) -> list[Choice]:
    """The checkpoint's record; one written before the load levels' choices (an archived sweep's) holds the
    single-request choice alone as an object (``{}``: nothing)."""
    found = read_json(path)
    return [Choice(**one) for one in (found if isinstance(found, list) else [found] if found else [])]


def sessions_of(choices: Sequence[Choice], sessions: int) -> list[str]:
    """The confirmation sessions the choices need: every chosen configuration's and baseline's, each once however
    many choices name it, round by round."""
    names = dict.fromkeys(name for choice in choices for name in (choice.configuration, choice.baseline))
    return [confirmation_name(name, k) for k in range(1, sessions + 1) for name in names]


def confirmed_of(
    choice: Choice, sessions: int, runs: Mapping[str, list[Run]], windows: Mapping[str, list[Window]]
) -> Confirmed:
    """A choice's confirmation from the fresh sessions' runs (single) or windows (a load level)."""
    if choice.load == SINGLE:
        return Confirmed(choice, *confirmed_runs(choice, sessions, runs))
    return Confirmed(choice, *confirmed_windows(choice, sessions, windows))


def confirmed_runs(choice: Choice, sessions: int, runs: Mapping[str, list[Run]]) -> tuple[Comparison, int]:
    """``confirmed`` from the runs of every configuration-instance (``load_runs``), excluded runs left out, and
    the sessions with counted runs of the side with fewer."""
    fresh = [
        [kept_and_excluded(runs.get(confirmation_name(name, k), []))[0] for k in range(1, sessions + 1)]
        for name in (choice.configuration, choice.baseline)
    ]
    spread = (choice.spread_sd, choice.spread_df)
    return confirmed(*fresh, spread), min(sum(1 for session in side if session) for side in fresh)


def confirmed_windows(choice: Choice, sessions: int, windows: Mapping[str, list[Window]]) -> tuple[Comparison, int]:
    """``confirmed_rates`` at the choice's load level from the window records of every configuration-instance
    (``load_windows``), each fresh session's rate its replicate's in load.csv (``loadsummary.session_rate``), and
    the sessions with windows there of the side with fewer."""
    from specsweep.analyse import loadsummary  # pandas: in the confirmation job only, not in Snakemake's process

    fresh = [
        [
            loadsummary.session_rate(windows.get(confirmation_name(name, k), []), choice.load)
            for k in range(1, sessions + 1)
        ]
        for name in (choice.configuration, choice.baseline)
    ]
    spread = (choice.spread_sd, choice.spread_df)
    counted = min(sum(1 for rate in side if not math.isnan(rate)) for side in fresh)
    return confirmed_rates(*fresh, spread), counted


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


def write(found: Sequence[Confirmed], path: str | Path) -> None:
    """confirmation.csv: one row per choice, the header alone when nothing was confirmed."""
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COLUMNS))
        writer.writeheader()
        for one in found:
            writer.writerow(
                {
                    **{key: value for key, value in asdict(one.choice).items() if key in COLUMNS},
                    "sessions": one.sessions,
                    "speedup": one.result.ratio,
                    "speedup_ci95_low": one.result.ci_low,
                    "speedup_ci95_high": one.result.ci_high,
                    "speedup_p_value": one.result.p_value,
                    "ci_df": one.result.df,
                }
            )


def conclusion_lines(path: str | Path) -> list[str]:
    """The conclusion's lines on the confirmation, one per row of confirmation.csv."""
    rows = conclusion.read(path)
    if not rows:
        return ["  confirmed: nothing to confirm (no baseline, or no configuration beside it)"]
    return [_line(row) for row in rows]


def _line(row: Row) -> str:
    what = "best" if row["declared"] == "True" else "leading candidate (not declared best)"
    # a confirmation.csv written before the load column (an earlier sweep's, resumed) holds the single row alone
    load = row.get("load") or SINGLE
    where = "" if load == SINGLE else f" at {load}"
    low, high = conclusion.number(row, "speedup_ci95_low"), conclusion.number(row, "speedup_ci95_high")
    interval = (
        "no CI: one fresh session each, and no spread of the choosing sessions to pool"
        if math.isnan(low)
        else f"95 % CI {low:.2f}-{high:.2f}"
    )
    return (
        f"  confirmed in {row['sessions']} fresh sessions{where}: {row['configuration']} ({what}) "
        f"{conclusion.number(row, 'speedup'):.2f}x over {row['baseline']} ({interval}; "
        f"the sweep's own sessions said {conclusion.number(row, 'chosen_speedup'):.2f}x)"
    )


def plan_lines(sessions: int, levels: int) -> list[str]:
    """What the plan says of ``benchmark.confirm_sessions`` (nothing when off), with ``levels`` load levels."""
    if not sessions:
        return []
    at_load = (
        f", and up to {sessions * levels} more for the {levels} load level(s)' winners ({sessions} of each "
        "configuration that wins a level, once however many it wins)"
        if levels
        else ""
    )
    return [
        f"Confirmation: after the summary, {2 * sessions} more sessions (benchmark.confirm_sessions: {sessions} of "
        f"the chosen configuration and {sessions} of its baseline){at_load}, not in the estimate above"
    ]
