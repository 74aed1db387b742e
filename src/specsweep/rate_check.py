"""Whether a run's client-measured decode rate can be trusted: it must be defined, and agree with the
engine's own clock where the engine reports one.

The client times the same n - 1 token intervals as llama.cpp's ``predicted_per_second`` (see
benchmarks/fidelity.py: the two agree within 0.2 % on every run measured). A client that was
paused (Ctrl-Z then ``fg``), swapped out or starved of CPU sees a much lower rate than the engine
produced; such a run says nothing about the configuration. It is excluded from the statistics,
kept on disk and counted in summary.csv (``runs_excluded``), and the session says so.
"""

from __future__ import annotations

import math
from typing import Any

# benchmark.rate_tolerance_pct's default: far above the measured disagreement (< 0.2 %), far below
# what a paused or starved client produces (a 1 s pause in a 10 s run is 10 %).
DEFAULT_TOLERANCE_PCT = 10.0


def engine_rate(record: dict[str, Any]) -> float | None:
    """The engine's own decode rate for this run (llama.cpp ``timings.predicted_per_second``), if reported."""
    rate = (record.get("engine") or {}).get("timings", {}).get("predicted_per_second")
    return float(rate) if isinstance(rate, int | float) and math.isfinite(rate) and rate > 0 else None


def exclusion_reason(record: dict[str, Any], tolerance_pct: float) -> str | None:
    """Why this run must not count (None when it may)."""
    client = record["client"]["decode_tokens_per_s"]
    if not isinstance(client, int | float) or not math.isfinite(client) or client <= 0:
        return (f"no client decode rate ({record['tokens']} tokens in {record['client']['content_events']} "
                f"streamed event(s): the decode interval could not be timed)")
    engine = engine_rate(record)
    if engine is None:
        return None
    off_pct = 100.0 * abs(client / engine - 1.0)
    if off_pct > tolerance_pct:
        return (f"the client measured {client:.1f} tok/s but the engine {engine:.1f} tok/s ({off_pct:.0f} % apart, "
                f"more than benchmark.rate_tolerance_pct={tolerance_pct:g}): the client was paused or starved")
    return None


def kept_and_excluded(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Runs that count, and runs the session marked ``excluded`` (kept on disk, left out of statistics)."""
    return [r for r in records if not r.get("excluded")], [r for r in records if r.get("excluded")]
