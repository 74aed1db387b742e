"""Sessions where the answer is open (analyse/sequential.py) by simulation, through the library's own rounds:
family-wise false positives (a difference declared where there is none, or in the wrong direction), wrong
equivalences (declared within ±detect_pct where the truth is not), the coverage of each comparison's reported
repeated interval, and the sessions measured against the fixed design at the maximum. Sessions are log-normal;
a configuration's rate in a session is its true rate times exp(N(0, sd)).

    .venv/bin/python benchmarks/sequential.py [--sweeps N]        (a row of make bench)
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import simulation_main

from specsweep.analyse import sequential
from specsweep.plan.design import SessionRange

DETECT_PCT = 5.0
SESSIONS = SessionRange(2, 8)
# true speedups of the configurations beside the baseline: an A/A sweep, and one with an equal, a small, a
# clear and a slower configuration
SCENARIOS = {"A/A, 5 configurations": (1.0,) * 5, "1.00 / 1.03 / 1.08 / 1.15 / 0.90": (1.0, 1.03, 1.08, 1.15, 0.90)}


def measure(sweeps: int, name: str, truth: tuple[float, ...], sd: float, seed: int = 2) -> dict:
    rng = np.random.default_rng(seed)
    names = ["base", *(f"c{i}" for i in range(len(truth)))]
    true = dict(zip(names, (1.0, *truth), strict=True))
    margin = math.log1p(DETECT_PCT / 100)
    false_positive = wrong_equivalence = covered = covered_always = compared = used = 0
    for _ in range(sweeps):
        draws = {n: true[n] * np.exp(rng.normal(0.0, sd, SESSIONS.max)) for n in names}
        state = sequential.start(names, "base", SESSIONS)
        while sequential.after_look(state, {n: list(draws[n][: state.measured[n]]) for n in names}, DETECT_PCT):
            pass
        used += sum(state.measured.values())
        verdicts = state.decided
        false_positive += any(
            (v.verdict == sequential.FASTER and true[n] <= 1) or (v.verdict == sequential.SLOWER and true[n] >= 1)
            for n, v in verdicts.items()
        )
        wrong_equivalence += sum(
            v.verdict == sequential.EQUIVALENT and abs(math.log(true[n])) >= margin for n, v in verdicts.items()
        )
        covered += sum(v.ci_low <= true[n] <= v.ci_high for n, v in verdicts.items())
        covered_always += sum(  # every look's repeated interval, up to the one that stopped it
            all(seen[n].ci_low <= true[n] <= seen[n].ci_high for seen in state.looks[: v.look])
            for n, v in verdicts.items()
        )
        compared += len(verdicts)
    return {
        "scenario": name,
        "sd": sd,
        "sweeps": sweeps,
        "familywise_false_positive": false_positive / sweeps,
        "wrong_equivalence": wrong_equivalence / compared,
        "coverage": covered / compared,
        "coverage_every_look": covered_always / compared,
        "sessions": used / sweeps,
        "fixed_sessions": len(names) * SESSIONS.max,
    }


def measure_all(sweeps: int = 2000) -> list[dict]:
    return [measure(sweeps, name, truth, sd) for name, truth in SCENARIOS.items() for sd in (0.03,)]


def lines(results: list[dict]) -> list[tuple[str, str, str]]:
    """(measure, figure, target) rows for make bench's table."""
    out = []
    for r in results:
        saved = 1 - r["sessions"] / r["fixed_sessions"]
        where = f"sessions {SESSIONS.min}-{SESSIONS.max}, {r['scenario']}, {100 * r['sd']:.0f} %"
        out += [
            (
                f"{where}: FWER; wrong equivalence",
                f"{100 * r['familywise_false_positive']:.1f}; {100 * r['wrong_equivalence']:.1f}",
                "≤ 5; ≤ 5 %",
            ),
            (
                "  repeated intervals: covering at every look; the published (stopping) one",
                f"{100 * r['coverage_every_look']:.1f}; {100 * r['coverage']:.1f}",
                "95 ± 2; ≥ 95 %",
            ),
            (
                f"  sessions per sweep, sequential / fixed at {SESSIONS.max} (GPU time saved)",
                f"{r['sessions']:.1f} / {r['fixed_sessions']} ({100 * saved:.0f} %)",
                "report",
            ),
        ]
    return out


def main() -> None:
    simulation_main(__doc__, 2000, measure_all, lines)


if __name__ == "__main__":
    main()
