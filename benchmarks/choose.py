"""Choosing the speculation setting per load level, by simulation: specsweep's search against
``tune_speculative_k``'s rule, side by side on the same simulated campaigns.

A campaign tunes one speculative parameter (steps k; k = 0 is no speculation) whose true throughput follows
the cost model's curve (analyse/costmodel.py ``tok_s``): an interior optimum at k 2 or 3 at concurrency 1,
which moves down to 1, then 0, as the load makes each verified token dearer. A session (one server launch)
measures every level with WINDOWS windows; its rates carry the launch's offset (log-normal, LAUNCH_CV, shared
by its levels) and each window its own (RUN_CV), as measured on the seed's machines. GPU time is counted in
sessions, which cost the same in both methods (every session measures every level with WINDOWS windows).

(a) specsweep within a budget of sessions (BUDGETS: the rule's 2 and 3 launches a k): the search
(analyse/search.py) starts at the seed's steps 0, 2, 5, measures each level's proposals (their union), one
session a value, until every level's best has its neighbours measured; then the race (analyse/sequential.py
``race``): every level's candidates for best (not shown slower than its leader by the session-level test) get
one more session a round, leaders first, while the budget still holds the confirmation, until each level's race
is decided. Each level chooses its leader (``sequential.leader``). The confirmation (analyse/confirm.py
``confirmed_rates``): every level's winner, once however many levels it wins, and one baseline shared by all
levels, measured again in fresh sessions, whose speedup alone is reported with its 95 % interval: one session
each with the spread of the choosing sessions (``spread``; the pipeline's ``benchmark.confirm_sessions: 1``),
or two each with their own spread alone.

(b) tune_speculative_k's rule, reimplemented from its definition in vLLM's
vllm/benchmarks/sweep/tune_speculative_k.py (vllm-project/vllm, commit
318528f63c2df7f04b0f237dd714af3dc58ce1fa): every k of the grid at every batch size (the rule refuses a grid
that differs between batch sizes, and extrapolation); per (batch size, k) at least ``min_runs`` (3) runs, their
median and MAD, refused when MAD / median exceeds 0.1; the conservative objective median - penalty (1.0) x
1.4826 x MAD; per batch size each k's utility is its conservative objective over the best one, counted as 1
within the relative tolerance (0.01); the highest utility wins, ties to the smaller k; the reported gain is
the winner's conservative objective over k = 0's. Run as vLLM's sweep runs it: one launch per k, its runs
within that launch; and with 2 and 3 launches a k, specsweep's budgets.

    .venv/bin/python benchmarks/choose.py [--sweeps N]        (rows of make bench)
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import simulation_main

from specsweep.analyse import confirm, costmodel, replicates, search, sequential

LAUNCH_CV, RUN_CV, WINDOWS = 0.03, 0.015, 3
# per level: target cost per verified token and draft cost per drafted token, in units of a pass's fixed cost
LEVELS = {"c1": (0.05, 0.12), "c4": (0.2, 0.2), "c16": (0.6, 0.3), "c64": (1.5, 0.5)}
SCENARIOS = {"acceptance 0.6": 0.6, "acceptance 0.7": 0.7}
GRID = tuple(range(7))  # the tune rule's k: steps 1..6 and none
START = (0, 2, 5)  # the seed's first sweep
MAX_ROUNDS = 4
DETECT_PCT = 1.0  # the race ends once its candidates are shown within ±1 % of the leader
BUDGETS = (14, 21)  # sessions: 2 and 3 launches of each of the rule's 7 values
# tune_speculative_k's defaults (its add_cli_args)
MIN_RUNS, PENALTY, MAX_RELATIVE_MAD, TOLERANCE = 3, 1.0, 0.1, 0.01


def true_rates(alpha: float) -> Callable[[int], np.ndarray]:
    """Throughput at each level for k draft steps (relative to one pass's fixed cost)."""
    return lambda k: np.array([float(costmodel.tok_s(k, 1.0, b, c, alpha, 0.0)) for b, c in LEVELS.values()])


@dataclass
class Campaign:
    """One simulated machine: sessions of a k measured at every level, and the GPU time spent on them. The
    n-th session of a k is the same draw in every method's campaign of one seed (common random numbers: the
    methods are compared on the same data wherever they measure the same thing)."""

    truth: Callable[[int], np.ndarray]
    seed: tuple[int, int]
    launched: dict[int, int] = field(default_factory=dict)

    @property
    def sessions(self) -> int:
        return sum(self.launched.values())

    def session(self, k: int) -> np.ndarray:
        """WINDOWS x levels rates of one fresh launch."""
        n = self.launched.get(k, 0)
        self.launched[k] = n + 1
        rng = np.random.default_rng([*self.seed, k, n])
        offset = rng.normal(0.0, LAUNCH_CV)
        return self.truth(k) * np.exp(offset + rng.normal(0.0, RUN_CV, (WINDOWS, len(LEVELS))))


@dataclass(frozen=True)
class Outcome:
    """Per level: the k chosen, the reported speedup against k = 0, its interval (None: the method gives none)."""

    chosen: list[int | None]
    speedup: list[float]
    interval: list[tuple[float, float] | None]
    sessions: int
    resolved: list[bool]
    confirming: int = 0  # of the sessions, those that confirmed the winners
    # the speedup the sessions that chose the winner give it (what a sweep without confirmation reports)
    unconfirmed: list[float] = field(default_factory=list)
    # the choosing sessions' spread the confirmed interval borrowed, and its degrees of freedom ((NaN, 0): none)
    borrowed: list[tuple[float, int]] = field(default_factory=list)


def _level(rates: dict[int, list[np.ndarray]], level: int) -> dict[str, list[float]]:
    """One level's session rates by value, as the library's rules read them (names)."""
    return {str(k): [float(s[level]) for s in found] for k, found in rates.items()}


def race(levels: list[dict[str, list[float]]]) -> list[str]:
    """The library's race (analyse/sequential.py): who gets the next round's sessions, from every level's
    session rates by value (``_level``); ``[]``: the race is decided."""
    return sequential.race(levels, DETECT_PCT)


def specsweep(
    campaign: Campaign,
    budget: int,
    confirm_sessions: int,
    choosing_spread: bool,
    allocate: Callable[[list[dict[str, list[float]]]], list[str]] = race,
) -> Outcome:
    """Search, race, confirm within ``budget`` sessions; ``choosing_spread``: the confirmed interval pools the
    choosing sessions' spread (analyse/confirm.py ``spread_from``); ``allocate``: who gets the race's next round
    (benchmarks/choose_race.py measures others)."""
    rates: dict[int, list[np.ndarray]] = {}  # k -> each session's mean rate per level
    values = list(START)
    for _ in range(MAX_ROUNDS):
        for k in values:
            rates[k] = [campaign.session(k).mean(axis=0)]
        proposals = [
            search.propose({k: float(np.mean(np.log([s[level] for s in found]))) for k, found in rates.items()})
            for level in range(len(LEVELS))
        ]
        values = [k for k in search.next_values(proposals) if k not in rates]
        if not values:
            break

    def confirming() -> int:  # the confirmation the current choice needs: its winners and the baseline
        return confirm_sessions * (
            1 + len({int(sequential.leader(_level(rates, level))) for level in range(len(LEVELS))} - {0})
        )

    # the race: the library's candidates for best get the sessions the confirmation leaves of the budget
    while order := allocate([_level(rates, level) for level in range(len(LEVELS))]):
        given = 0
        for name in order:
            if campaign.sessions + 1 + confirming() > budget:
                break
            rates[int(name)].append(campaign.session(int(name)).mean(axis=0))
            given += 1
        if not given:
            break
    chosen = [int(sequential.leader(_level(rates, level))) for level in range(len(LEVELS))]
    # a level is resolved when its race is decided (one candidate left, or all within ±DETECT_PCT)
    resolved = [not sequential.contenders(_level(rates, level), DETECT_PCT) for level in range(len(LEVELS))]
    unconfirmed = [
        math.exp(np.mean(np.log([s[level] for s in rates[k]])) - np.mean(np.log([s[level] for s in rates[0]])))
        for level, k in enumerate(chosen)
    ]
    # confirmation (analyse/confirm.py): fresh sessions of each winner and the baseline
    searched = campaign.sessions
    fresh = {k: [campaign.session(k).mean(axis=0) for _ in range(confirm_sessions)] for k in {0, *chosen}}
    speedups, intervals, borrowed = [], [], []
    for level, k in enumerate(chosen):
        spread = replicates.pooled_sd(_level(rates, level).values()) if choosing_spread else (math.nan, 0)
        borrowed.append(spread)
        if not k:  # the baseline chosen: no speedup to confirm
            speedups.append(1.0)
            intervals.append((1.0, 1.0))
            continue
        winner, baseline = ([float(s[level]) for s in fresh[value]] for value in (k, 0))
        found = confirm.confirmed_rates(winner, baseline, spread)
        speedups.append(found.ratio)
        intervals.append((found.ci_low, found.ci_high))
    return Outcome(
        chosen, speedups, intervals, campaign.sessions, resolved, campaign.sessions - searched, unconfirmed, borrowed
    )


def tune_choice(runs: dict[int, list[float]], tolerance: float = TOLERANCE) -> tuple[int, float] | None:
    """tune_speculative_k's k for one batch size from each k's runs, and its reported gain over k = 0 (a
    ratio); None where the rule refuses (too few runs, or a relative MAD above its limit)."""
    conservative = {}
    for k, values in runs.items():
        median = statistics.median(values)
        mad = statistics.median(abs(v - median) for v in values)
        if len(values) < MIN_RUNS or mad / median > MAX_RELATIVE_MAD:
            return None
        conservative[k] = max(median - PENALTY * 1.4826 * mad, 0.0)
    top = max(conservative.values())
    utility = {k: 1.0 if v / top >= 1.0 - tolerance else v / top for k, v in conservative.items()}
    k = min(utility, key=lambda k: (-utility[k], k))
    return k, conservative[k] / conservative[0]


def tune_rule(campaign: Campaign, launches_per_k: int, tolerance: float = TOLERANCE) -> Outcome:
    """The rule's choice per level from every k of the grid, each measured in ``launches_per_k`` launches
    (each window one run)."""
    runs = {k: np.vstack([campaign.session(k) for _ in range(launches_per_k)]) for k in GRID}
    found = [tune_choice({k: list(r[:, level]) for k, r in runs.items()}, tolerance) for level in range(len(LEVELS))]
    return Outcome(
        [f[0] if f else None for f in found],
        [f[1] if f else math.nan for f in found],
        [None] * len(LEVELS),
        campaign.sessions,
        [False] * len(LEVELS),
    )


def _cached(truth: Callable[[int], np.ndarray]) -> Callable[[int], np.ndarray]:
    found: dict[int, np.ndarray] = {}
    return lambda k: found[k] if k in found else found.setdefault(k, truth(k))


def ours(budget: int, confirm_sessions: int = 1) -> str:
    spread = "choosing spread" if confirm_sessions == 1 else "their own spread"
    return f"specsweep in {budget}, confirming {confirm_sessions} session(s) each ({spread})"


def rule(launches: int) -> str:
    return f"tune_speculative_k, {launches} launch(es) a k ({launches * len(GRID)})"


# where the rule wins: its tie to the smaller k within its tolerance, shown by the rule without it
UNTIED = "tune_speculative_k without its 1 % tie to the smaller k, 2 launches a k (14)"


# the goal at each budget: specsweep's P(best) against the rule's at the same GPU time
GOALS = [(ours(budget), rule(budget // len(GRID))) for budget in BUDGETS] + [(ours(BUDGETS[0], 2), rule(2))]


def measure(sweeps: int, scenario: str, seed: int = 33) -> dict:
    truth = _cached(true_rates(SCENARIOS[scenario]))
    curve = np.array([truth(k) for k in GRID])  # the truth over the grid, k x level
    best = curve.argmax(axis=0)
    methods: dict[str, list[Outcome]] = {}
    for i in range(sweeps):
        found = {rule(1): tune_rule(Campaign(truth, (seed, i)), 1)}
        for budget in BUDGETS:
            found[ours(budget)] = specsweep(Campaign(truth, (seed, i)), budget, 1, True)
            found[rule(budget // len(GRID))] = tune_rule(Campaign(truth, (seed, i)), budget // len(GRID))
        found[ours(BUDGETS[0], 2)] = specsweep(Campaign(truth, (seed, i)), BUDGETS[0], 2, False)
        found[UNTIED] = tune_rule(Campaign(truth, (seed, i)), 2, tolerance=0.0)
        for name, outcome in found.items():
            methods.setdefault(name, []).append(outcome)
    return {
        "scenario": scenario,
        "sweeps": sweeps,
        "true_best": dict(zip(LEVELS, best.tolist(), strict=True)),
        "methods": {name: _figures(found, truth, curve) for name, found in methods.items()},
    }


def _figures(outcomes: list[Outcome], truth: Callable[[int], np.ndarray], curve: np.ndarray) -> dict:
    """Per level: P(best), mean regret %, bias of the reported speedup (%), its interval's coverage; sessions."""
    best = curve.max(axis=0)
    levels = {}
    for level, name in enumerate(LEVELS):
        hit, regret, bias, covered, judged, resolved, unconfirmed = [], [], [], [], 0, [], []
        for o in outcomes:
            k = o.chosen[level]
            if k is None:  # refused: as bad as the worst setting measured
                hit.append(False)
                regret.append(100 * (1 - curve[:, level].min() / best[level]))
                continue
            real = float(truth(k)[level])
            hit.append(math.isclose(real, best[level]))
            regret.append(100 * (1 - real / best[level]))
            speedup = real / float(truth(0)[level])
            bias.append(100 * (o.speedup[level] / speedup - 1))
            if o.unconfirmed:
                unconfirmed.append(100 * (o.unconfirmed[level] / speedup - 1))
            resolved.append(o.resolved[level])
            if k and (interval := o.interval[level]) is not None:
                judged += 1
                covered.append(interval[0] <= speedup <= interval[1])
        levels[name] = {
            "p_best": float(np.mean(hit)),
            "regret_pct": float(np.mean(regret)),
            "bias_pct": float(np.mean(bias)) if bias else math.nan,
            "coverage": float(np.mean(covered)) if judged else math.nan,
            "resolved": float(np.mean(resolved)) if resolved else math.nan,
            "bias_unconfirmed_pct": float(np.mean(unconfirmed)) if unconfirmed else math.nan,
        }
    return {
        "sessions": float(np.mean([o.sessions for o in outcomes])),
        "confirming": float(np.mean([o.confirming for o in outcomes])),
        "levels": levels,
    }


def measure_all(sweeps: int = 800) -> list[dict]:
    return [measure(sweeps, scenario) for scenario in SCENARIOS]


def goal(result: dict, pair: tuple[str, str]) -> str:
    """The first method's P(best) minus the second's, per level, in points."""
    ours, theirs = (result["methods"][name]["levels"] for name in pair)
    return " ".join(f"{100 * (ours[level]['p_best'] - theirs[level]['p_best']):+.0f}" for level in ours)


def lines(results: list[dict]) -> list[tuple[str, str, str]]:
    """(measure, figure, target) rows: per scenario and method, the GPU time; per level P(best) %, regret %,
    bias % and coverage %; then the goal: P(best) against the rule's at the same GPU time."""
    rows = []
    for r in results:
        best = ", ".join(f"{level} k={k}" for level, k in r["true_best"].items())
        rows.append((f"choosing k per level, {r['scenario']} (true best {best}), {r['sweeps']} campaigns", "", ""))
        for name, found in r["methods"].items():
            rows.append(
                (
                    f"  {name}: GPU time, sessions (of them confirming the winners)",
                    f"{found['sessions']:.1f} ({found['confirming']:.1f})",
                    "report",
                )
            )
            if not math.isnan(found["levels"][next(iter(LEVELS))]["bias_unconfirmed_pct"]):
                rows.append(
                    (
                        f"    bias % of the winner's speedup from the sessions that chose it ({', '.join(LEVELS)})",
                        " ".join(f"{f['bias_unconfirmed_pct']:+.2f}" for f in found["levels"].values()),
                        "report",
                    )
                )
            for level, f in found["levels"].items():
                coverage = "none" if math.isnan(f["coverage"]) else f"{100 * f['coverage']:.1f}"
                rows.append(
                    (
                        f"    {level}: P(best) %; regret %; bias of the reported speedup %; its interval's coverage %",
                        f"{100 * f['p_best']:.0f}; {f['regret_pct']:.2f}; {f['bias_pct']:+.2f}; {coverage}",
                        "95 ± 2 % cover",
                    )
                )
        for pair in GOALS:
            rows.append(
                (
                    f"  P(best) of {pair[0]} minus {pair[1]}, per level ({', '.join(LEVELS)}), points",
                    goal(r, pair),
                    "≥ 0 each",
                )
            )
    return rows


def main() -> None:
    simulation_main(__doc__, 800, measure_all, lines)


if __name__ == "__main__":
    main()
