"""The SLO rate search (``benchmark.load.rate_search``): what it asks for and its objectives.

Per session, a bounded bisection over open-loop request rates between ``low`` and ``high`` finds the
highest rate whose probe window meets every percentile objective of ``benchmark.load.slo``
(``ttft_p99_ms``: the 99th percentile of TTFT at most that many ms). ``steps`` bisection probes follow
the probe at ``low``, so the answer is known to (high - low) / 2**steps: the search's resolution
(specsweep.measure.rate_search runs it; docs/load.md, "SLO rate search").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from specsweep.record.errors import ConfigError

# benchmark.load.slo keys each request is held to (goodput, vLLM's --goodput); every other key is a
# percentile objective over a window's requests
PER_REQUEST = ("ttft_ms", "tpot_ms", "e2e_ms")
PERCENTILE_KEY = re.compile(r"^(ttft|tpot|e2e)_p(\d+(?:\.\d+)?)_ms$")


@dataclass(frozen=True)
class Objective:
    """One percentile objective: the ``quantile``-th percentile of ``metric`` at most ``limit_ms``."""

    key: str  # as the config names it: ttft_p99_ms
    metric: str  # ttft, tpot or e2e (vLLM's E2EL, as the per-request e2e_ms)
    quantile: float
    limit_ms: float


def objectives_of(slo: dict[str, float]) -> list[Objective]:
    """The percentile objectives among ``benchmark.load.slo``'s keys, in the config's order."""
    found = []
    for key, limit in slo.items():
        if match := PERCENTILE_KEY.match(key):
            found.append(Objective(key, match[1], float(match[2]), float(limit)))
    return found


def per_request(slo: dict[str, float]) -> dict[str, float]:
    """The objectives each request is held to (goodput): the percentile ones left out."""
    return {key: limit for key, limit in slo.items() if key in PER_REQUEST}


@dataclass(frozen=True)
class RateSearch:
    low: float  # requests/s, probed first
    high: float  # the ceiling: never probed, the bisection's upper bound
    steps: int  # bisection probes after the one at low

    @property
    def resolution(self) -> float:
        """How far below the true highest passing rate the answer may lie: (high - low) / 2**steps."""
        return (self.high - self.low) / 2**self.steps

    @property
    def probes(self) -> int:
        """Probe windows at most: low, then one per step."""
        return 1 + self.steps

    def as_dict(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "steps": self.steps, "resolution": self.resolution}


def rate_search_of(benchmark: dict[str, Any]) -> RateSearch | None:
    """``benchmark.load.rate_search`` of a validated config, checked against its SLOs (None: no search)."""
    load = benchmark.get("load") or {}
    spec = load.get("rate_search")
    if not spec:
        return None
    search = RateSearch(float(spec["low"]), float(spec["high"]), int(spec["steps"]))
    if not search.low < search.high:
        raise ConfigError(
            f"benchmark/load/rate_search/high: {spec['high']} is not above low {spec['low']}; the search bisects "
            f"between them (low the first probe, high the ceiling)"
        )
    for objective in objectives_of(load.get("slo") or {}):
        if not 0 < objective.quantile <= 100:
            raise ConfigError(
                f"benchmark/load/slo/{objective.key}: percentile {objective.quantile:g} is not in (0, 100]; "
                f"write e.g. {objective.metric}_p99_ms"
            )
    if not objectives_of(load.get("slo") or {}):
        raise ConfigError(
            "benchmark/load/rate_search: the search needs a percentile objective in benchmark/load/slo to meet "
            "(ttft_p99_ms, tpot_p90_ms, e2e_p50_ms, ...: the percentile over a probe's requests at most that "
            "many ms); add one"
        )
    return search
