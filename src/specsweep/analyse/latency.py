"""Per-request latency from compact arrival times, percentiles over requests, and their uncertainty.

A request record keeps the arrival of every event that carried generated tokens as integer
microseconds, delta-encoded (the first value is send -> first token, each next one the gap to the
previous event), so every percentile can be recomputed from the archive. The definitions:

* TTFT   = send -> first token;
* TPOT   = (last token - first token) / (tokens - 1): decode time per output token, first excluded;
* ITL    = the gaps between events (an event may carry several tokens with speculation);
* E2E    = send -> end of the response.

Percentiles pool the requests (or gaps) of every window of a level; their 95 % interval is a
percentile bootstrap over windows (windows are the independent repetitions; requests inside a window
share the server's state). With 3 windows there are only 10 distinct resamples, so the interval is
coarse: it is stated, not hidden.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specsweep.record.arrivals import decode_arrivals

PERCENTILES = (50, 90, 99)
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20_261_130


@dataclass(frozen=True)
class RequestLatency:
    ttft_s: float
    tpot_s: float  # NaN for a single-token response
    e2e_s: float
    itl_s: tuple[float, ...]

    @property
    def decode_tokens_per_s(self) -> float:
        return 1.0 / self.tpot_s if self.tpot_s > 0 else float("nan")


def request_latency(deltas_us: Sequence[int], tokens: int, e2e_s: float) -> RequestLatency:
    arrivals = decode_arrivals(deltas_us)
    if not arrivals:
        raise ValueError("a request without any token-carrying event has no latency")
    decode = arrivals[-1] - arrivals[0]
    tpot = decode / (tokens - 1) if tokens > 1 and decode > 0 else float("nan")
    return RequestLatency(
        ttft_s=arrivals[0], tpot_s=tpot, e2e_s=e2e_s, itl_s=tuple(b - a for a, b in itertools.pairwise(arrivals))
    )


def meets_slo(latency: RequestLatency, slo: dict[str, float]) -> bool:
    """Every objective the user set (``ttft_ms``, ``tpot_ms``, ``e2e_ms``) holds for this request."""
    measured = {"ttft_ms": latency.ttft_s, "tpot_ms": latency.tpot_s, "e2e_ms": latency.e2e_s}
    return all(1000 * measured[key] <= limit for key, limit in slo.items())


@dataclass(frozen=True)
class Percentile:
    value: float
    low: float  # 95 % bootstrap over windows
    high: float


def pooled_percentiles(
    windows: Sequence[Sequence[float]],
    percentiles: Sequence[float] = PERCENTILES,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> list[Percentile]:
    """Each percentile of the values of all windows pooled, with a percentile-bootstrap interval from
    resampling whole windows. Quantiles use the inverted empirical CDF (an observed value, numpy's
    ``inverted_cdf``), so a resample is just a weight per window on one sorted array."""
    sizes = [len(w) for w in windows]
    if sum(sizes) == 0:
        return [Percentile(*[float("nan")] * 3) for _ in percentiles]
    values = np.concatenate([np.asarray(w, dtype=float) for w in windows])
    owner = np.repeat(np.arange(len(windows)), sizes)
    order = np.argsort(values, kind="stable")
    values, owner = values[order], owner[order]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(windows), size=(resamples, len(windows)))
    counts = np.zeros((resamples, len(windows)))
    np.add.at(counts, (np.arange(resamples)[:, None], picks), 1.0)
    weights = np.vstack([np.ones(len(windows)), counts])[:, owner]  # row 0: the data as measured
    cumulative = np.cumsum(weights, axis=1)
    found = []
    for q in percentiles:
        target = cumulative[:, -1:] * q / 100.0
        index = np.minimum((cumulative < target - 1e-9).sum(axis=1), len(values) - 1)
        estimates = values[index]
        resampled = estimates[1:][cumulative[1:, -1] > 0]
        low, high = np.percentile(resampled, [2.5, 97.5]) if resampled.size else (np.nan, np.nan)
        found.append(Percentile(float(estimates[0]), float(low), float(high)))
    return found
