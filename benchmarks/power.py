"""The power formula of maths/power.py against simulation: at the smallest detectable difference it computes,
how often the summary's test (pooled log-scale spread, t-test against the baseline, Holm over the family)
declares it. One configuration differs, the others equal the baseline; sessions are log-normal.

    .venv/bin/python benchmarks/power.py [--sweeps N]        (a row of make bench)
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import simulation_main

from specsweep.maths import power, stats

# (session spread, configurations with the baseline, sessions each): the default sweep at 3 %, the sessions
# it would need for ±5 %, and a noisier, smaller sweep
SCENARIOS = ((0.03, 6, 2), (0.03, 6, 10), (0.10, 4, 3))


def measure(sweeps: int, sd: float, configurations: int, sessions: int, seed: int = 33) -> dict:
    df = configurations * (sessions - 1)
    comparisons = configurations - 1
    se = sd * math.sqrt(2 / sessions)
    delta = power.detectable(se, df, comparisons)
    logs = np.random.default_rng(seed).normal(0.0, sd, size=(sweeps, configurations, sessions))
    logs[:, 1] += delta  # configuration 0 is the baseline, 1 the one that differs
    pooled = np.sqrt(logs.var(axis=-1, ddof=1).mean(axis=-1))
    t = (logs[:, 1:].mean(axis=-1) - logs[:, :1].mean(axis=-1)) / (pooled[:, None] * math.sqrt(2 / sessions))
    p = 2 * special.stdtr(df, -np.abs(t))  # replicates.compare's p, a whole sweep at once
    holm = np.array([stats.holm(list(row)) for row in p])
    return {
        "sd": sd,
        "configurations": configurations,
        "sessions": sessions,
        "sweeps": sweeps,
        "detectable_pct": 100 * math.expm1(delta),
        "predicted": power.power(delta, se, df, comparisons),
        "holm": float((holm[:, 0] < stats.ALPHA).mean()),
        "bonferroni": float((p[:, 0] * comparisons < stats.ALPHA).mean()),
    }


def lines(results: list[dict]) -> list[tuple[str, str, str]]:
    """(measure, figure, target) rows for make bench's table."""
    return [
        (
            f"power at ±{r['detectable_pct']:.1f} % ({100 * r['sd']:.0f} % sessions, {r['configurations']} configs "
            f"x {r['sessions']}): predicted / Holm / Bonferroni",
            f"{100 * r['predicted']:.1f} / {100 * r['holm']:.1f} / {100 * r['bonferroni']:.1f}",
            "80 ± 1 %",
        )
        for r in results
    ]


def measure_all(sweeps: int = 20_000) -> list[dict]:
    return [measure(sweeps, *scenario) for scenario in SCENARIOS]


def main() -> None:
    simulation_main(__doc__, 20_000, measure_all, lines)


if __name__ == "__main__":
    main()
