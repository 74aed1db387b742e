"""The SLO rate search of one session (specsweep.plan.rate_search): probes and their verdicts.

A probe is one open-loop window at a rate (after a discarded warmup window where ``benchmark.load.warmup``
asks for one), judged on the requests *sent* within its steady interval, however late they ended: an
overloaded server's piled-up requests end in the drain, and leaving them out would pass it.

Bisection: the probe at ``low`` first (missing there, the rate is below the range and the search ends),
then ``steps`` probes at the middle of the bracket [highest passing, lowest failing], ``high`` the
initial upper end. A failing probe ends the search above its rate, so a saturated server (requests piling
up, no steady interval, or an objective missed by more than SATURATED_BY times) is never probed higher.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from specsweep.plan.load_levels import Arrivals
from specsweep.plan.rate_search import Objective, RateSearch
from specsweep.record.arrivals import decode_arrivals
from specsweep.record.results import RateProbe, RateSearchRecord, Window, WindowRequest

MEETS, MISSES, SATURATED = "meets", "misses", "saturated"
# an objective missed by this factor or more, or a window's last requests this many times slower than its
# first: the server no longer keeps up with the rate
SATURATED_BY = 3.0


def _latencies(request: WindowRequest) -> dict[str, float]:
    """TTFT, TPOT (NaN for one token) and E2EL in seconds, as vLLM defines them (analyse/latency.py, which a
    measuring module does not import, computes the tables' from the same record)."""
    arrivals = decode_arrivals(request.arrivals_us)
    tpot = (arrivals[-1] - arrivals[0]) / (request.tokens - 1) if request.tokens > 1 else float("nan")
    return {"ttft": arrivals[0], "tpot": tpot, "e2e": arrivals[-1]}


def judge(window: Window, rate: float, objectives: list[Objective]) -> RateProbe:
    """Whether ``window`` (a probe at ``rate``) meets every objective, misses one, or shows saturation."""
    start, end = window.steady
    sample = sorted((r for r in window.requests if not r.flagged and start <= r.sent_s <= end), key=lambda r: r.sent_s)
    if end <= start or not sample:
        return RateProbe(rate, SATURATED, "no steady interval", len(sample), {}, window.duration_s)
    latencies = [_latencies(r) for r in sample if r.arrivals_us]
    measured: dict[str, float] = {}
    for objective in objectives:
        values = [x[objective.metric] for x in latencies if not math.isnan(x[objective.metric])]
        # numpy's default (linear) percentile, vLLM's; no value: NaN, a missed objective
        measured[objective.key] = 1000 * float(np.percentile(values, objective.quantile)) if values else float("nan")
    missed = [o for o in objectives if not measured[o.key] <= o.limit_ms]  # NaN: no value, missed
    third = len(latencies) // 3
    if third >= 2:
        first, last = (float(np.median([x["e2e"] for x in part])) for part in (latencies[:third], latencies[-third:]))
        if last > SATURATED_BY * first:
            why = f"requests piling up (median E2EL {1000 * first:.0f} ms -> {1000 * last:.0f} ms)"
            return RateProbe(rate, SATURATED, why, len(sample), measured, window.duration_s)
    if badly := [o for o in missed if measured[o.key] > SATURATED_BY * o.limit_ms]:
        why = ", ".join(f"{o.key} {measured[o.key]:.0f} > {SATURATED_BY:g} x {o.limit_ms:g}" for o in badly)
        return RateProbe(rate, SATURATED, why, len(sample), measured, window.duration_s)
    if missed:
        why = ", ".join(f"{o.key} {measured[o.key]:.0f} > {o.limit_ms:g}" for o in missed)
        return RateProbe(rate, MISSES, why, len(sample), measured, window.duration_s)
    return RateProbe(rate, MEETS, "every objective met", len(sample), measured, window.duration_s)


def search(spec: RateSearch, probe: Callable[[float], RateProbe], arrivals: Arrivals) -> RateSearchRecord:
    """Bisect between ``spec.low`` and ``spec.high``; ``probe(rate)`` measures and judges one window."""
    probes = [probe(spec.low)]
    passing: float | None = None
    if probes[0].meets:
        passing, failing = spec.low, spec.high
        for _ in range(spec.steps):
            rate = (passing + failing) / 2
            probes.append(probe(rate))
            passing, failing = (rate, failing) if probes[-1].meets else (passing, rate)
    return RateSearchRecord(spec.low, spec.high, spec.steps, spec.resolution, probes, passing, arrivals.as_dict())
