"""Whether a run counts: its token count must be one its stream can carry (record/tokens.py), and its
client-measured decode rate must be defined and agree with the engine's own clock where the engine reports one.

The client times the same n - 1 token intervals as llama.cpp's ``predicted_per_second`` (see
benchmarks/fidelity.py: the two agree within 0.2 % on every run measured). A client that was
paused (Ctrl-Z then ``fg``), swapped out or starved of CPU sees a much lower rate than the engine
produced; such a run says nothing about the configuration. It is excluded from the statistics,
kept on disk and counted in summary.csv (``runs_excluded``), and the session says so.
"""

from __future__ import annotations

import math

from specsweep.record.results import Run

# benchmark.rate_tolerance_pct's default: far above the measured disagreement (< 0.2 %), far below
# what a paused or starved client produces (a 1 s pause in a 10 s run is 10 %).
DEFAULT_TOLERANCE_PCT = 10.0


def exclusion_reason(run: Run, tolerance_pct: float) -> str | None:
    """Why this run must not count (None when it may): its token count disagrees with its stream, or its
    client rate is undefined or disagrees with the engine's."""
    if flagged := run.flagged:
        return flagged
    client, engine = run.decode_tokens_per_s, run.engine_tokens_per_s
    if not math.isfinite(client) or client <= 0:
        return (
            f"no client decode rate ({run.tokens} tokens in {run.client.content_events} streamed event(s): "
            f"the decode interval could not be timed)"
        )
    if not isinstance(engine, int | float) or not math.isfinite(engine) or engine <= 0:
        return None  # the engine reports no rate of its own (SGLang, vLLM): nothing to compare with
    off_pct = 100.0 * abs(client / engine - 1.0)
    if off_pct > tolerance_pct:
        return (
            f"the client measured {client:.1f} tok/s but the engine {engine:.1f} tok/s ({off_pct:.0f} % apart, "
            f"more than benchmark.rate_tolerance_pct={tolerance_pct:g}): the client was paused or starved"
        )
    return None


def kept_and_excluded(runs: list[Run]) -> tuple[list[Run], list[Run]]:
    """Runs that count, and runs the session marked ``excluded`` (kept on disk, left out of statistics)."""
    return [r for r in runs if not r.excluded], [r for r in runs if r.excluded]
