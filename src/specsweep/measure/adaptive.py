"""Adaptive repetitions: keep measuring a configuration until its mean is known well enough.

After the ``benchmark.runs`` declared runs, a session with ``benchmark.adaptive`` keeps running
until the 95 % Student-t half-width of the mean decode tok/s is at most ``ci_half_width_pct``
of the mean, or ``max_runs`` runs are done. The declared runs stay the Snakemake outputs
(``runs/run_<i>.json``); further runs go to ``runs/extra/`` and count in the summary; why the
session stopped is recorded in ``launch.json`` (``repetitions``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specsweep.maths.stats import MIN_RUNS_FOR_CI, t_interval


@dataclass(frozen=True)
class Decision:
    more: bool
    reason: str
    half_width_pct: float | None


def next_step(rates: Sequence[float], ci_half_width_pct: float, max_runs: int) -> Decision:
    """Whether to run once more, given the decode rates so far, and why."""
    data = np.asarray(rates, dtype=float)
    mean = float(data.mean()) if len(data) else 0.0
    half = None
    if len(data) >= MIN_RUNS_FOR_CI and mean:  # the Student-t interval only: no bootstrap after every run
        high = float(t_interval(data)[1])
        half = (high - mean) / mean * 100
    if half is not None and half <= ci_half_width_pct:
        return Decision(
            False, f"95 % CI half-width {half:.2f} % <= target {ci_half_width_pct} % after {len(data)} runs", half
        )
    if len(data) >= max_runs:
        shown = f"{half:.2f} %" if half is not None else "undefined"
        return Decision(
            False, f"reached max_runs={max_runs} with CI half-width {shown} (target {ci_half_width_pct} %)", half
        )
    return Decision(True, "", half)
