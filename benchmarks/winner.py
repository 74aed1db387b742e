"""The confirmed winner (analyse/confirm.py) by simulation: the bias of the chosen configuration's speedup as the
choosing sessions estimate it, against the bias of the same configuration's speedup from fresh sessions, and
the coverage of the fresh sessions' interval. A sweep of 20 configurations beside a baseline, 2 log-normal
sessions each, chooses the fastest (the leading candidate; the declared best is the fastest of the significant
ones, the same configuration in nearly every such sweep); the winner and the baseline are then measured in
``benchmark.confirm_sessions`` fresh sessions each and compared by ``confirm.confirmed_rates``, their spread
pooled with the choosing sessions' (as the pipeline's ``Choice`` carries it from summary.csv).

    .venv/bin/python benchmarks/winner.py [--sweeps N]        (a row of make bench)
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import simulation_main

from specsweep.analyse import confirm, replicates

CONFIGURATIONS = 20  # beside the baseline, as the measured bias
SESSIONS = 2
# (session spread, true speedups of the 20 configurations): all equal to the baseline (the choice picks noise
# alone), and a graded set with an interior best at +6 %
SCENARIOS = (
    (0.03, "A/A", (1.0,) * CONFIGURATIONS),
    (0.03, "graded to +6 %", tuple(1.0 + 0.06 * math.sin(math.pi * k / (CONFIGURATIONS - 1)) for k in range(20))),
)


def measure(sweeps: int, sd: float, name: str, truth: tuple[float, ...], fresh: int, seed: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    true_logs = np.log(np.array((1.0, *truth)))
    logs = true_logs[None, :, None] + rng.normal(0.0, sd, size=(sweeps, len(true_logs), SESSIONS))
    means = logs.mean(axis=-1)
    chosen = 1 + means[:, 1:].argmax(axis=1)  # the fastest beside the baseline
    rows = np.arange(sweeps)
    target = true_logs[chosen] - true_logs[0]  # the chosen configuration's true log speedup
    chosen_error = means[rows, chosen] - means[:, 0] - target
    errors, covered = [], 0
    for k in range(sweeps):
        winner = np.exp(true_logs[chosen[k]] + rng.normal(0.0, sd, fresh))
        baseline = np.exp(true_logs[0] + rng.normal(0.0, sd, fresh))
        spread = replicates.pooled_sd(np.exp(logs[k]))
        result = confirm.confirmed_rates(list(winner), list(baseline), spread)
        errors.append(result.log_ratio - target[k])
        covered += result.ci_low <= math.exp(target[k]) <= result.ci_high
    return {
        "scenario": name,
        "sd": sd,
        "fresh_sessions": fresh,
        "sweeps": sweeps,
        "chosen_bias_pct": 100 * math.expm1(float(chosen_error.mean())),
        "confirmed_bias_pct": 100 * math.expm1(float(np.mean(errors))),
        "confirmed_coverage": covered / sweeps,
    }


def measure_all(sweeps: int = 4000) -> list[dict]:
    return [measure(sweeps, sd, name, truth, fresh) for sd, name, truth in SCENARIOS for fresh in (1, 2, 3)]


def lines(results: list[dict]) -> list[tuple[str, str, str]]:
    """(measure, figure, target) rows for make bench's table: bias chosen / confirmed; coverage."""
    return [
        (
            f"winner of {CONFIGURATIONS} x {SESSIONS} sessions, {r['scenario']}, {100 * r['sd']:.0f} %, confirmed in "
            f"{r['fresh_sessions']}: bias chosen / confirmed; CI coverage",
            f"{r['chosen_bias_pct']:+.1f} / {r['confirmed_bias_pct']:+.1f} %; {100 * r['confirmed_coverage']:.1f}",
            "±1 %; 95 ± 2 %",
        )
        for r in results
    ]


def main() -> None:
    simulation_main(__doc__, 4000, measure_all, lines)


if __name__ == "__main__":
    main()
