"""Adaptive repetitions: keep measuring a configuration until its mean is known well enough.

After the ``benchmark.runs`` declared runs, a session with ``benchmark.adaptive`` keeps running
until the 95 % Student-t half-width of the mean decode tok/s is at most ``ci_half_width_pct``
of the mean, or ``max_runs`` runs are done. The declared runs stay the Snakemake outputs
(``runs/run_<i>.json``); further runs go to ``runs/extra/`` and count in the summary; why the
session stopped is recorded in ``launch.json`` (``repetitions``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specsweep.atomic import read_json
from specsweep.stats import MIN_RUNS_FOR_CI, t_interval


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
        return Decision(False, f"95 % CI half-width {half:.2f} % <= target {ci_half_width_pct} % after "
                               f"{len(data)} runs", half)
    if len(data) >= max_runs:
        shown = f"{half:.2f} %" if half is not None else "undefined"
        return Decision(False, f"reached max_runs={max_runs} with CI half-width {shown} "
                               f"(target {ci_half_width_pct} %)", half)
    return Decision(True, "", half)


def extra_runs_dir(runs_dir: Path) -> Path:
    return runs_dir / "extra"


def with_extra_runs(declared: Iterable[str | Path]) -> list[Path]:
    """The declared run files plus any adaptive extras beside them, in run order."""
    paths = [Path(p) for p in declared]
    extras = {e for p in paths for e in extra_runs_dir(p.parent).glob("run_*.json")}
    return paths + sorted(extras, key=lambda e: (configuration_of(e), int(e.stem.split("_")[1])))


def configuration_of(run_path: Path) -> str:
    """results/<cfg>/runs/run_<i>.json or results/<cfg>/runs/extra/run_<i>.json -> <cfg>."""
    runs_dir = run_path.parent.parent if run_path.parent.name == "extra" else run_path.parent
    return runs_dir.parent.name


def runs_by_configuration(declared: Iterable[str | Path]) -> dict[str, list[dict[str, Any]]]:
    """Run records per configuration: the declared runs and any adaptive extras beside them.
    The one loader of run records for the summary, cost model and drift report."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for path in with_extra_runs(declared):
        runs.setdefault(configuration_of(path), []).append(read_json(path))
    return runs
