"""Race allocations for choosing k per level (benchmarks/choose.py), each measured against tune_speculative_k's
rule at the same GPU time on the same campaigns: which way of spending the sessions that the search and the
confirmation's reserve leave chooses the best most often, and whether the confirmed interval, whose spread is
borrowed from the choosing sessions, still covers. Not a make bench row: the figures of docs/summary.md's
paragraph on other races.

- race: the library's (analyse/sequential.py ``race``): every open level's candidates for best, leaders first.
- closest: by the means alone: of every level's comparisons of its leader with each other value, the one with
  the smallest standardised gap (gap / sqrt(1/n_leader + 1/n_other), on a unit spread: the spread is the same for
  all) gets one session, on its side with fewer sessions (the leader's on a tie); no test and no stop before
  the budget.
- pair: the pair race measured before (docs/summary.md): of the levels whose race is open (the library's
  candidates for best), the one whose leader and runner-up are closest (standardised gap) gives each a session.
- ocba: OCBA's shares by the means alone (equal spread): at each level each other value's share 1 / gap² (gaps
  floored at 0.5 %), the leader's the root of the sum of their squares, normalised; a value's share its largest
  over the levels; the next session to the largest deficit against that share of the sessions.
- knows-c1: not a method but a bound: closest on the true gaps at c1 alone, every race session spent on c1's
  contest (an allocation that knows which values are close there).

Per level: P(best) and its difference from the rule's (paired over campaigns that share their draws, with its
standard error); the reported speedup's bias; the confirmed interval's coverage, as observed and as expected given
the borrowed spread. The fresh sessions' estimate is independent of the choosing sessions, so an interval whose
borrowed spread is s on df degrees of freedom covers with probability 2 Phi(t_df s / sigma) - 1, sigma the simulation's
session spread (about sqrt(LAUNCH_CV² + RUN_CV² / WINDOWS) on the log scale); its mean over the campaigns is the
coverage without the noise of the covered-or-not count (±0.5 points at 2000 campaigns). ``spread ratio``: the mean
of s² / sigma², 1 where the allocation leaves the borrowed spread unbiased.

    .venv/bin/python benchmarks/choose_race.py [--sweeps N] [--allocations race,closest,...] [--acceptance 0.6,0.7]
        [--budgets 14,21]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
import choose

from specsweep.analyse import sequential

Allocate = Callable[[list[dict[str, list[float]]]], list[str]]
SIGMA = math.sqrt(choose.LAUNCH_CV**2 + choose.RUN_CV**2 / choose.WINDOWS)
OCBA_FLOOR_PCT = 0.5


def _log_means(rates: dict[str, list[float]]) -> dict[str, float]:
    return {name: float(np.mean(np.log(found))) for name, found in rates.items()}


def _fewer(rates: dict[str, list[float]], top: str, other: str) -> list[str]:
    return [other] if len(rates[other]) < len(rates[top]) else [top]


def closest(levels: list[dict[str, list[float]]]) -> list[str]:
    """The closest comparison with a leader, by the means alone (module doc)."""
    found = []
    for rates in levels:
        means = _log_means(rates)
        top = sequential.leader(rates)
        for name in means.keys() - {top}:
            gap = (means[top] - means[name]) / math.sqrt(1 / len(rates[top]) + 1 / len(rates[name]))
            found.append((gap, top, name, rates))
    _, top, other, rates = min(found, key=lambda f: f[:3])
    return _fewer(rates, top, other)


def pair(levels: list[dict[str, list[float]]]) -> list[str]:
    """The closest open contest's leader and runner-up (module doc); ``[]`` when every level's race is decided."""
    found = []
    for rates in levels:
        candidates = sequential.contenders(rates, choose.DETECT_PCT)
        if len(candidates) >= 2:
            means = _log_means(rates)
            top, second = candidates[:2]
            gap = (means[top] - means[second]) / math.sqrt(1 / len(rates[top]) + 1 / len(rates[second]))
            found.append((gap, top, second))
    return list(min(found)[1:]) if found else []


def ocba(levels: list[dict[str, list[float]]]) -> list[str]:
    """OCBA's shares by the means alone, the largest over the levels (module doc)."""
    share: dict[str, float] = {}
    floor = math.log1p(OCBA_FLOOR_PCT / 100)
    for rates in levels:
        means = _log_means(rates)
        top = sequential.leader(rates)
        weights = {name: 1 / max(means[top] - means[name], floor) ** 2 for name in means.keys() - {top}}
        weights[top] = math.sqrt(sum(w * w for w in weights.values()))
        total = sum(weights.values())
        for name, weight in weights.items():
            share[name] = max(share.get(name, 0.0), weight / total)
    sessions = sum(len(found) for found in levels[0].values()) + 1
    deficit = {name: sessions * s / sum(share.values()) - len(levels[0][name]) for name, s in share.items()}
    return [max(deficit, key=lambda name: (deficit[name], -int(name)))]


def knows_c1(acceptance: float) -> Allocate:
    """closest on the true gaps at c1 alone (a bound, module doc)."""
    truth = choose.true_rates(acceptance)

    def allocate(levels: list[dict[str, list[float]]]) -> list[str]:
        rates = levels[0]
        true = {name: math.log(truth(int(name))[0]) for name in rates}
        top = max(true, key=true.get)
        gaps = {
            name: (true[top] - true[name]) / math.sqrt(1 / len(rates[top]) + 1 / len(rates[name]))
            for name in rates.keys() - {top}
        }
        return _fewer(rates, top, min(gaps, key=lambda name: (gaps[name], name)))

    return allocate


ALLOCATIONS: dict[str, Callable[[float], Allocate]] = {
    "race": lambda _: choose.race,
    "closest": lambda _: closest,
    "pair": lambda _: pair,
    "ocba": lambda _: ocba,
    "knows-c1": knows_c1,
}


def _expected_coverage(spread: tuple[float, int]) -> float:
    sd, df = spread
    return 2 * float(stats.norm.cdf(stats.t.ppf(0.975, df) * sd / SIGMA)) - 1 if df else 0.0


def measure(
    sweeps: int, acceptance: float, allocations: list[str], budgets: tuple[int, ...] = choose.BUDGETS, seed: int = 33
) -> dict:
    """Every allocation at every budget, and the rule with ``budget // 7`` launches a k, on the same campaigns."""
    scenario = f"acceptance {acceptance}"
    truth = choose._cached(choose.true_rates(choose.SCENARIOS[scenario]))
    curve = np.array([truth(k) for k in choose.GRID])
    best = curve.argmax(axis=0)
    found: dict = {"scenario": scenario, "sweeps": sweeps, "budgets": {}}
    for budget in budgets:
        launches = budget // len(choose.GRID)
        rule = [choose.tune_rule(choose.Campaign(truth, (seed, i)), launches) for i in range(sweeps)]
        rule_hits = np.array([[o.chosen[level] == b for level, b in enumerate(best)] for o in rule], dtype=float)
        rows = {"rule": {"p_best": rule_hits.mean(axis=0).tolist(), "sessions": float(budget)}}
        for name in allocations:
            allocate = ALLOCATIONS[name](acceptance)
            outcomes = [
                choose.specsweep(choose.Campaign(truth, (seed, i)), budget, 1, True, allocate) for i in range(sweeps)
            ]
            hits = np.array([[o.chosen[level] == b for level, b in enumerate(best)] for o in outcomes], dtype=float)
            figures = choose._figures(outcomes, truth, curve)["levels"]
            judged = [[o.borrowed[level] for o in outcomes if o.chosen[level]] for level in range(len(choose.LEVELS))]
            rows[name] = {
                "p_best": hits.mean(axis=0).tolist(),
                "difference": (hits - rule_hits).mean(axis=0).tolist(),
                "difference_se": ((hits - rule_hits).std(axis=0) / math.sqrt(sweeps)).tolist(),
                "bias_pct": [f["bias_pct"] for f in figures.values()],
                "coverage": [f["coverage"] for f in figures.values()],
                "expected_coverage": [
                    float(np.mean([_expected_coverage(s) for s in level])) if level else math.nan for level in judged
                ],
                "spread_ratio": [
                    float(np.mean([s[0] ** 2 / SIGMA**2 for s in level if s[1]])) if level else math.nan
                    for level in judged
                ],
                "sessions": float(np.mean([o.sessions for o in outcomes])),
                "most_sessions": int(max(o.sessions for o in outcomes)),
            }
        found["budgets"][budget] = rows
    return found


def lines(results: list[dict]) -> list[str]:
    out = []

    def per_level(values: list[float], form: str, scale: float = 100.0) -> str:
        return " / ".join("-" if math.isnan(v) else form.format(scale * v) for v in values)

    for r in results:
        out.append(f"{r['scenario']}, {r['sweeps']} campaigns; per level {', '.join(choose.LEVELS)}")
        for budget, rows in r["budgets"].items():
            out.append(f"  {budget} sessions: the rule's P(best) % {per_level(rows['rule']['p_best'], '{:.1f}')}")
            for name, f in rows.items():
                if name == "rule":
                    continue
                differences = " / ".join(
                    f"{100 * d:+.1f} ± {100 * se:.1f}"
                    for d, se in zip(f["difference"], f["difference_se"], strict=True)
                )
                out += [
                    f"    {name}: sessions {f['sessions']:.2f} (at most {f['most_sessions']}); P(best) "
                    f"{per_level(f['p_best'], '{:.1f}')}; minus the rule's, points {differences}",
                    f"      bias % {per_level(f['bias_pct'], '{:+.2f}', 1.0)}; coverage % observed "
                    f"{per_level(f['coverage'], '{:.1f}')}, expected {per_level(f['expected_coverage'], '{:.1f}')}; "
                    f"spread ratio {per_level(f['spread_ratio'], '{:.3f}', 1.0)}",
                ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweeps", type=int, default=2000)
    parser.add_argument("--allocations", default=",".join(ALLOCATIONS))
    parser.add_argument("--acceptance", default=",".join(str(a) for a in choose.SCENARIOS.values()))
    parser.add_argument("--budgets", default=",".join(str(b) for b in choose.BUDGETS))
    args = parser.parse_args()
    budgets = tuple(int(b) for b in args.budgets.split(","))
    allocations = args.allocations.split(",")
    results = [measure(args.sweeps, float(a), allocations, budgets) for a in args.acceptance.split(",") if a.strip()]
    print(json.dumps(results, indent=1))
    print("\n".join(lines(results)))


if __name__ == "__main__":
    main()
