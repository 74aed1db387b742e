"""The setting per load level (analyse/loadbest.py) by simulation: how often a level's verdicts are wrong
(the truly best called slower, or a configuration called best or equivalent that is more than the tolerance
below the truly best) and how often the level is resolved, with log-normal sessions of 3 %.

    .venv/bin/python benchmarks/level_choice.py [--sweeps N]        (a row of make bench)
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import simulation_main

from specsweep.analyse import loadbest

TOLERANCE_PCT = 3.0
SD = 0.03
# true rates of a level's configurations: an A/A level, and a best with one within the tolerance and two
# beyond it (the baseline among them)
SCENARIOS = {"A/A, 4 configurations": (1.0, 1.0, 1.0, 1.0), "1.00 / 1.10 / 1.12 / 1.20": (1.0, 1.10, 1.12, 1.20)}


def measure(sweeps: int, truth: tuple[float, ...], sessions: int, seed: int = 4) -> dict:
    rng = np.random.default_rng(seed)
    margin = math.log1p(TOLERANCE_PCT / 100)
    best = math.log(max(truth))
    wrong = resolved = 0
    for _ in range(sweeps):
        rates = {
            f"c{i}": {(k, 0): mean * math.exp(rng.normal(0, SD)) for k in range(sessions)}
            for i, mean in enumerate(truth)
        }
        found = loadbest.level_verdicts(rates, TOLERANCE_PCT)
        claimed = [math.log(truth[int(n[1:])]) for n, v in found.items() if v in (loadbest.BEST, loadbest.EQUIVALENT)]
        slower = [math.log(truth[int(n[1:])]) for n, v in found.items() if v == loadbest.SLOWER]
        wrong += any(c < best - margin for c in claimed) or any(s == best for s in slower)
        resolved += loadbest.BEST in found.values()
    return {
        "truth": truth,
        "sessions": sessions,
        "sweeps": sweeps,
        "wrong": wrong / sweeps,
        "resolved": resolved / sweeps,
    }


def measure_all(sweeps: int = 2000) -> list[dict]:
    return [measure(sweeps, truth, sessions) for truth in SCENARIOS.values() for sessions in (2, 4, 8)]


def lines(results: list[dict]) -> list[tuple[str, str, str]]:
    """(measure, figure, target) rows for make bench's table: wrong verdicts; levels resolved."""
    names = {truth: name for name, truth in SCENARIOS.items()}
    return [
        (
            f"setting per level, {names[tuple(r['truth'])]}, {r['sessions']} sessions: wrong; resolved",
            f"{100 * r['wrong']:.1f}; {100 * r['resolved']:.1f}",
            "≤ 5 %; report",
        )
        for r in results
    ]


def main() -> None:
    simulation_main(__doc__, 2000, measure_all, lines)


if __name__ == "__main__":
    main()
