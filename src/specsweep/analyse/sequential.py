"""Sessions where the answer is open: ``benchmark.sessions: {min: a, max: b}`` measures every configuration in
a sessions, then, round by round, gives one more session only to the configurations whose verdict against the
baseline is still open (and to the baseline while any is), up to b.

Looking at the data after every round and stopping when it looks decided would inflate the errors (each look
is another chance of a false positive), so every test and interval is a repeated one: valid whichever look it
is read at. A comparison's statistic at the looks (a sessions, a + 1, ..., b, both sides growing together)
is a random walk at those times; ``repeated_p`` turns the nominal p of the summary's t-test (pooled session
spread, analyse/replicates.py) into the probability that some look reaches that level under no difference (a
Pocock-type boundary, found by a seeded simulation of that t-test over the looks: the looks' correlation and the
pooled spread's few degrees of freedom at the first looks included), which is a valid p-value however many
looks are taken. The sweep's comparisons are one Holm family of those
repeated p-values: a family-wise false positive at any look is at most alpha = 0.05. Each comparison's repeated
interval is the summary's interval at the nominal level whose repeated level is 95 % (wider than the one-look
interval): its intervals of all looks hold together with 95 %, whenever its configuration stops.

After a look a comparison is decided, and its configuration stops, when
- Holm on the repeated p-values declares it (faster or slower), or
- it is shown equivalent to the baseline within ±``benchmark.detect_pct`` (a difference the sweep set out to
  detect is excluded): two one-sided repeated tests at alpha / comparisons each, i.e. its repeated interval at
  that level lies inside the margin, so that a wrong equivalence anywhere in the family, at any look, has
  probability at most alpha;
otherwise it is open. A stopped configuration keeps its verdict and interval of the look that decided it.

The candidates for best race on after their verdict against the baseline is decided (``contenders``): the
leader (the fastest mean log rate) and every configuration not shown slower than it by the one-sided
session-level test at alpha / (candidates - 1) (Bonferroni over the comparisons with the leader: at one look the
truly best is dropped with probability at most alpha). The race is decided when one candidate is left, or when
every candidate's interval against the leader at that level lies within ±``benchmark.detect_pct`` (the choice
can then be off by less than the sweep set out to detect). Dropping the best costs the choice, never the
honesty of the published speedup: that comes from fresh sessions (analyse/confirm.py). With one session each
there is no session spread and nobody is dropped.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specsweep.analyse import replicates
from specsweep.maths import stats
from specsweep.measure.rate_check import kept_and_excluded
from specsweep.plan import walltime
from specsweep.plan.config import Configuration
from specsweep.plan.design import SessionRange, fixed_sessions, session_range
from specsweep.record import results
from specsweep.record.atomic import read_json, write_json
from specsweep.record.results import Run

WALKS = 100_000  # simulated null sweeps of the boundary: a repeated level known to about ±0.0014 at 0.05
GROUPS_SIMULATED = 50  # configurations beyond these add degrees of freedom that no longer change the boundary

FASTER, SLOWER, EQUIVALENT, OPEN = "faster", "slower", "equivalent", "open"


@dataclass(frozen=True)
class Verdict:
    """A comparison against the baseline at one look: its verdict and its repeated 95 % interval."""

    verdict: str
    ratio: float
    ci_low: float
    ci_high: float
    p_holm: float
    look: int  # 1-based: the look that decided it, or the last one it was open at


def look(
    rates: Mapping[str, Sequence[float]],
    baseline: str,
    sessions: SessionRange,
    look_index: int,
    detect_pct: float,
) -> dict[str, Verdict]:
    """Every configuration's verdict against ``baseline`` at look ``look_index`` (1-based), from each
    configuration's session workload rates so far (the baseline's among them)."""
    model = _pooled(rates)
    others = [name for name in rates if name != baseline]
    comparisons = {name: replicates.compare_rates(rates[name], rates[baseline], model) for name in others}
    groups = len(rates)
    adjusted = stats.holm([repeated_p(comparisons[n].p_value, sessions, groups) for n in others])
    repeated = 1 - nominal_level(stats.ALPHA, sessions, groups)
    equivalence = 1 - nominal_level(2 * stats.ALPHA / max(1, len(others)), sessions, groups)
    margin = math.log1p(detect_pct / 100)
    found = {}
    for (name, comparison), p_holm in zip(comparisons.items(), adjusted, strict=True):
        low, high = comparison.interval(repeated)
        inner_low, inner_high = comparison.interval(equivalence)
        if p_holm < stats.ALPHA:
            verdict = FASTER if comparison.ratio > 1 else SLOWER
        elif -margin < math.log(inner_low) and math.log(inner_high) < margin:
            verdict = EQUIVALENT
        else:  # NaN bounds (no spread yet) compare False: open
            verdict = OPEN
        found[name] = Verdict(verdict, comparison.ratio, low, high, p_holm, look_index)
    return found


@functools.cache
def _null_minima(sessions: SessionRange, groups: int) -> np.ndarray:
    """The smallest nominal p over the looks of one comparison's t-test, in ``WALKS`` seeded sweeps of ``groups``
    configurations (the baseline among them) with no difference, sorted: the summary's test exactly (its spread
    pooled over every configuration, whose few degrees of freedom at the first looks move every look's
    statistic together), every configuration continuing to the last look."""
    from scipy import special

    rng = np.random.default_rng(0)
    groups = min(groups, GROUPS_SIMULATED)
    sums = np.zeros((WALKS, groups))
    squares = np.zeros((WALKS, groups))
    smallest = np.ones(WALKS)
    for n in range(1, sessions.max + 1):
        step = rng.standard_normal((WALKS, groups))
        sums += step
        squares += step**2
        if n >= sessions.min:
            means = sums / n
            spread = np.sqrt((squares - n * means**2).sum(axis=1) / (groups * (n - 1)))
            t = (means[:, 1] - means[:, 0]) / (spread * math.sqrt(2 / n))
            smallest = np.minimum(smallest, 2 * special.stdtr(groups * (n - 1), -np.abs(t)))
    return np.sort(smallest)


def repeated_p(p: float, sessions: SessionRange, groups: int) -> float:
    """The probability, under no difference, that some look of a sweep of ``groups`` configurations reaches the
    nominal two-sided ``p`` (NaN stays NaN)."""
    if math.isnan(p) or sessions.looks == 1:
        return p
    minima = _null_minima(sessions, groups)
    return float(np.searchsorted(minima, p, side="right")) / len(minima)


@functools.cache
def nominal_level(alpha: float, sessions: SessionRange, groups: int) -> float:
    """The nominal two-sided level at each look whose repeated level is ``alpha``."""
    if sessions.looks == 1:
        return alpha
    return float(np.quantile(_null_minima(sessions, groups), alpha))


def _pooled(rates: Mapping[str, Sequence[float]]) -> replicates.Pooled:
    sd, df = replicates.pooled_sd(rates.values())
    return replicates.Pooled(replicates.SESSION if df else "", sd, df)


@dataclass
class Rounds:
    """A sequential design's state: sessions per configuration and the verdicts decided so far."""

    sessions: SessionRange
    baseline: str
    measured: dict[str, int]  # configuration -> sessions measured
    decided: dict[str, Verdict]
    looks: list[dict[str, Verdict]]  # every look's verdicts, of every configuration, in order

    def next_round(self, racing: Sequence[str] = ()) -> list[str]:
        """The configurations that get one more session: the open ones, and the baseline while any is; then the
        ``racing`` candidates for best, each up to the maximum."""
        open_ = [n for n in self.measured if n != self.baseline and n not in self.decided]
        following = [self.baseline, *open_] if open_ and self.measured[self.baseline] < self.sessions.max else []
        return following + [n for n in racing if n not in following and self.measured[n] < self.sessions.max]


def start(names: Sequence[str], baseline: str, sessions: SessionRange) -> Rounds:
    return Rounds(sessions, baseline, {name: sessions.min for name in names}, {}, [])


def after_look(state: Rounds, rates: Mapping[str, Sequence[float]], detect_pct: float) -> list[str]:
    """Take the look on the rates measured so far (every configuration's, stopped ones included), record what
    it decided, and return who gets the next session (``[]``: the design is done)."""
    index = len(state.looks) + 1
    verdicts = look(rates, state.baseline, state.sessions, index, detect_pct)
    state.looks.append(verdicts)
    last = state.measured[state.baseline] >= state.sessions.max
    for name, verdict in verdicts.items():
        if name not in state.decided and (verdict.verdict != OPEN or last):
            state.decided[name] = verdict
    following = state.next_round(contenders(rates, detect_pct))
    for name in following:
        state.measured[name] += 1
    return following


def _log_mean(rates: Sequence[float]) -> float:
    return float(np.mean(np.log(rates)))


def leader(rates: Mapping[str, Sequence[float]]) -> str:
    """The choice at one level: the fastest mean log session rate (the candidates' leader)."""
    return max((name for name in rates if len(rates[name])), key=lambda name: _log_mean(rates[name]))


def contenders(rates: Mapping[str, Sequence[float]], detect_pct: float) -> list[str]:
    """The candidates for best at one level (each configuration's session rates), fastest first; ``[]`` when
    the race is decided (module doc)."""
    ranked = sorted((name for name in rates if len(rates[name])), key=lambda name: -_log_mean(rates[name]))
    if len(ranked) < 2:
        return []
    top, model = ranked[0], _pooled(rates)
    compared = {name: replicates.compare_rates(rates[name], rates[top], model) for name in ranked[1:]}
    level = stats.ALPHA / len(compared)
    # a two-sided p below 2 x level: the one-sided test at level (each mean is below the leader's)
    kept = [name for name, comparison in compared.items() if not comparison.p_value < 2 * level]
    if not kept:
        return []
    margin = math.log1p(detect_pct / 100)
    bounds = [compared[name].interval(1 - 2 * level) for name in kept]
    if all(-margin < math.log(low) and math.log(high) < margin for low, high in bounds):
        return []
    return [top, *kept]


def race(levels: Sequence[Mapping[str, Sequence[float]]], detect_pct: float) -> list[str]:
    """Who gets the next session where several levels choose from the same configurations (a session measures
    every level): the candidates of every level whose race is open, ordered by their best rank at any level
    (the leaders first), so that a round cut short by a budget spends it on the likeliest best."""
    rank: dict[str, int] = {}
    for rates in levels:
        for position, name in enumerate(contenders(rates, detect_pct)):
            rank[name] = min(rank.get(name, position), position)
    return sorted(rank, key=lambda name: (rank[name], name))


def replay(
    rates: Mapping[str, Sequence[float]], baseline: str, sessions: SessionRange, detect_pct: float
) -> tuple[Rounds, list[str]]:
    """The rounds as the sessions measured so far decided them (each configuration's rates in session order,
    stopped ones shorter): the state, and who gets the next session not measured yet (``[]``: done). A
    checkpoint sees only the files, so each round replays the looks before it: the same data, the same
    decisions, hence resumable."""
    state = start(list(rates), baseline, sessions)
    while True:
        following = after_look(state, {name: rates[name][: state.measured[name]] for name in rates}, detect_pct)
        if not following or any(len(rates[name]) < state.measured[name] for name in following):
            return state, following


def session_rates(sessions: Mapping[str, Sequence[str]], runs: Mapping[str, Sequence[Run]]) -> dict[str, list[float]]:
    """Each configuration's session workload rates in session order (``sessions``: its sessions' names, as
    plan/design.sessions_of gives them; ``runs``: ``load_runs``'s), on the prompts every session measured, excluded
    runs left out, as the summary's; configurations with no session measured left out."""
    kept = {name: kept_and_excluded(list(found))[0] for name, found in runs.items()}
    measured = {name: [kept[s] for s in names if kept.get(s)] for name, names in sessions.items()}
    shared = replicates.common_prompts(*(one for found in measured.values() for one in found))
    return {name: replicates.units(found, replicates.SESSION, shared) for name, found in measured.items() if found}


def next_sessions(
    sessions: Mapping[str, Sequence[str]],
    runs: Mapping[str, Sequence[Run]],
    baseline: str,
    session_range: SessionRange,
    detect_pct: float,
) -> list[str]:
    """The sessions measured next (their names, from ``sessions``), from the runs of the sessions measured so far."""
    state, following = replay(session_rates(sessions, runs), baseline, session_range, detect_pct)
    return [sessions[name][state.measured[name] - 1] for name in following]


def verdicts(
    sessions: Mapping[str, Sequence[str]],
    runs: Mapping[str, Sequence[Run]],
    baseline: str,
    session_range: SessionRange,
    detect_pct: float,
) -> dict[str, Verdict]:
    """Each configuration's repeated verdict against ``baseline``: of the look that decided it (the last look for
    one open at max); where the rounds did not finish (a failed sweep), of the last look taken."""
    rates = session_rates(sessions, runs)
    if baseline not in rates:
        return {}
    state, _ = replay(rates, baseline, session_range, detect_pct)
    return {**state.looks[-1], **state.decided}


def decided_at(verdict: Verdict, session_range: SessionRange) -> int | None:
    """The sessions per configuration at the look that decided ``verdict`` (None while open)."""
    return None if verdict.verdict == OPEN else session_range.min + verdict.look - 1


def write_round(path: str | Path, following: Sequence[str]) -> None:
    """Who gets the next session (the checkpoint's output: results_tree.sequential_round)."""
    write_json(path, {"next_session": list(following)})


def read_round(path: str | Path) -> list[str]:
    return list(read_json(path)["next_session"])


def plan_lines(
    configurations: Mapping[str, Configuration], benchmark: Mapping[str, Any], root: str | Path = results.ROOT
) -> list[str]:
    """What the plan and the onstart estimate say of ``benchmark.sessions: {min, max}`` (nothing for a plain
    integer): the rounds, and the sessions and measuring time (plan/walltime.py, from the earlier sessions under
    ``root``) between every verdict decided at the first look and every configuration measured to max.
    ``configurations``: every planned session (design.configurations_of)."""
    sessions = session_range(benchmark)
    if not sessions.sequential:
        return []
    heading = f"Sessions: {sessions.min} to {sessions.max} per configuration (benchmark.sessions)"
    if not any(c.baseline for c in configurations.values()):
        return [
            f"{heading}: no baseline to compare with, so no rounds: every configuration is measured in "
            f"{sessions.max} sessions, the fixed design"
        ]
    fixed = fixed_sessions(configurations, sessions)
    estimates = walltime.estimate(configurations, benchmark, walltime.measured_sessions(root))
    seconds = {e.session: e.seconds for e in estimates}
    fewest, most = sum(seconds[name] for name in fixed), sum(seconds.values())
    return [
        f"{heading}, in rounds: every configuration's first {sessions.min}, then after each round one more only for "
        f"those whose verdict against the baseline is still open (and the baseline while any is) and the "
        f"candidates for best while which is best is open, up to "
        f"{sessions.max} (analyse/sequential.py); each round's choice in results/sequential_round_<r>.json, the "
        f"repeated verdicts in summary.csv's sequential_* columns",
        f"Rounds: {len(fixed)} to {len(configurations)} sessions, {fewest / 60:.1f} to {most / 60:.1f} min of "
        f"measuring: every verdict decided at session {sessions.min} saves {len(configurations) - len(fixed)} "
        f"sessions against the fixed design, none when every answer stays open",
    ]


def saved_lines(measured: int, planned: int) -> list[str]:
    """The conclusion's line on what the rounds saved: ``measured`` of the ``planned`` sessions (the fixed design's
    every session up to max)."""
    return [
        f"  rounds: {measured} of {planned} sessions measured, {planned - measured} saved against the fixed design "
        f"(every configuration to the maximum of benchmark.sessions)"
    ]
