"""Per-request latency from compact arrival times, the steady interval of a window, percentiles over
requests, and their uncertainty.

A request record keeps the arrival of every event that carried generated tokens as integer
microseconds, delta-encoded (the first value is send -> first token, each next one the gap to the
previous event), so every percentile can be recomputed from the archive. The metrics are vLLM's
(``vllm bench serve``, vllm/benchmarks/serve.py ``calculate_metrics`` and the request functions of
vllm/benchmarks/lib/endpoint_request_func.py):

* TTFT = send -> first token;
* TPOT = (E2EL - TTFT) / (tokens - 1): decode time per output token, first token excluded;
* ITL  = the gaps between token-carrying events (with speculation an event may carry several tokens);
* E2EL = send -> last token-carrying event.

Percentiles follow vLLM's rule: ``numpy.percentile``'s default linear interpolation, over the requests
(ITL: the gaps) of the steady interval of every window of a level pooled. Their 95 % interval is by
sectioning over windows (Nakayama 2014): the pooled percentile ± t(b - 1) times the spread of the b
per-window percentiles around it, / sqrt(b), on the log scale (where every one is positive), so that
the bounds stay positive and a window's multiplicative offset is symmetric. Windows are the
independent repetitions (requests inside a window share the server's state); a percentile whose
windows hold too few values beyond it for the per-window estimates to be near normal is labelled
approximate (``Percentile.approximate``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from specsweep.maths import stats
from specsweep.record.arrivals import decode_arrivals
from specsweep.record.results import Window, WindowRequest

PERCENTILES = (50, 90, 99)
# Sectioning needs per-window percentiles close to normal: at least this many values beyond the percentile
# (on the rarer side) in every window, and this many windows, or the interval is labelled approximate.
TAIL_VALUES = 5
SECTIONING_WINDOWS = 3
# Values one level's percentile is computed from at most (8 bytes each, and numpy's partition copy):
# a window with more is subsampled, seeded, so that a level stays far below 100 MiB.
MAX_VALUES_PER_LEVEL = 2**20
SUBSAMPLE_SEED = 20_261_201


@dataclass(frozen=True)
class RequestLatency:
    ttft_s: float
    tpot_s: float  # NaN for a single-token response
    e2e_s: float  # send -> end of the response (the record's e2e_s)
    e2el_s: float  # send -> last token-carrying event (vLLM's E2EL)
    deltas_us: Sequence[int]  # the record's own list, not a copy

    @property
    def itl_s(self) -> tuple[float, ...]:
        return tuple(gap / 1e6 for gap in self.deltas_us[1:])

    @property
    def decode_tokens_per_s(self) -> float:
        return 1.0 / self.tpot_s if self.tpot_s > 0 else float("nan")


def request_latency(deltas_us: Sequence[int], tokens: int, e2e_s: float) -> RequestLatency:
    arrivals = decode_arrivals(deltas_us)
    if not arrivals:
        raise ValueError("a request without any token-carrying event has no latency")
    # vLLM: (latency - ttft) / (output_len - 1) for output_len > 1, zero when one event carried every token
    tpot = (arrivals[-1] - arrivals[0]) / (tokens - 1) if tokens > 1 else float("nan")
    return RequestLatency(ttft_s=arrivals[0], tpot_s=tpot, e2e_s=e2e_s, e2el_s=arrivals[-1], deltas_us=deltas_us)


def meets_slo(latency: RequestLatency, slo: dict[str, float]) -> bool:
    """Every per-request objective the user set (``ttft_ms``, ``tpot_ms``, ``e2e_ms`` = E2EL) holds for this
    request; percentile objectives (``ttft_p99_ms``) are the rate search's, over a window's requests."""
    measured = {"ttft_ms": latency.ttft_s, "tpot_ms": latency.tpot_s, "e2e_ms": latency.e2el_s}
    return all(1000 * measured[key] <= limit for key, limit in slo.items() if key in measured)


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float:
    """vLLM's percentile: numpy's default (linear interpolation between the order statistics)."""
    data = np.asarray(values, dtype=float)
    return float(np.percentile(data, q)) if data.size else float("nan")


@dataclass(frozen=True)
class SteadyWindow:
    """What of one window counts: its steady interval, the requests sent and ended within it (with their
    latencies), the tokens that arrived within it, and the requests that ended within it."""

    window: Window
    start_s: float
    end_s: float
    requests: list[tuple[WindowRequest, RequestLatency]]
    tokens: int
    ended: list[tuple[WindowRequest, RequestLatency]]

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    def rate(self, count: float) -> float:
        """``count`` per second of the steady interval (NaN when the interval is empty)."""
        return count / self.duration_s if self.duration_s > 0 else float("nan")

    @property
    def output_tokens_per_s(self) -> float:
        return self.rate(self.tokens)

    def itl_us(self) -> Iterator[int]:
        """The inter-token gaps of the steady requests, integer microseconds (no per-value objects kept)."""
        for request, _ in self.requests:
            yield from request.arrivals_us[1:]


def steady_part(window: Window) -> SteadyWindow:
    """The part of ``window`` its steady interval holds (``Window.steady``): tokens as the engine counted them,
    and no request whose count disagrees with its stream (``WindowRequest.flagged``)."""
    start, end = window.steady
    inside, ended, tokens = [], [], 0
    for request in window.requests:
        if request.flagged:
            continue
        latency = request_latency(request.arrivals_us, request.tokens, request.e2e_s)
        if window.in_steady(request):
            inside.append((request, latency))
        if start < request.ended_s <= end:
            ended.append((request, latency))
        at = request.sent_s + np.cumsum(np.asarray(request.arrivals_us, dtype=np.int64)) / 1e6
        counts = np.asarray(request.tokens_per_event[: len(at)], dtype=np.int64)
        tokens += int(counts[(at >= start) & (at <= end)].sum())
    return SteadyWindow(window, start, end, inside, tokens, ended)


@dataclass(frozen=True)
class Percentile:
    value: float
    low: float  # 95 % sectioning interval over windows
    high: float
    approximate: bool = False  # too few windows, or too few values beyond the percentile in a window


def _bounded(windows: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The windows' values, each subsampled (seeded uniform draws, which need no copy of the window) to its
    share of MAX_VALUES_PER_LEVEL where it holds more."""
    share = MAX_VALUES_PER_LEVEL // max(1, len(windows))
    rng = np.random.default_rng(SUBSAMPLE_SEED)
    return [w if w.size <= share else w[rng.integers(0, w.size, share)] for w in windows]


def sectioned_percentiles(
    windows: Sequence[Sequence[float] | np.ndarray], percentiles: Sequence[float] = PERCENTILES
) -> list[Percentile]:
    """Each percentile of the values of all windows pooled (vLLM's rule), with its 95 % sectioning
    interval over windows; NaN bounds with fewer than 2 non-empty windows."""
    arrays = [a[~np.isnan(a)] for a in _bounded([np.asarray(w, dtype=float) for w in windows])]
    arrays = [a for a in arrays if a.size]
    if not arrays:
        return [Percentile(math.nan, math.nan, math.nan, True) for _ in percentiles]
    pooled = np.concatenate(arrays)
    found = []
    for q in percentiles:
        value = float(np.percentile(pooled, q))
        b = len(arrays)
        smallest_tail = min(a.size for a in arrays) * min(q, 100 - q) / 100
        approximate = b < SECTIONING_WINDOWS or smallest_tail < TAIL_VALUES
        if b < 2:
            found.append(Percentile(value, math.nan, math.nan, True))
            continue
        each = np.array([np.percentile(a, q) for a in arrays])
        # on the log scale where it exists: latencies are positive and a window's offset multiplies them
        scale = (np.log, np.exp) if value > 0 and (each > 0).all() else (lambda x: x, lambda x: x)
        centre, spread = scale[0](value), scale[0](each)
        half = stats.t_critical(b - 1) * math.sqrt(float(np.sum((spread - centre) ** 2)) / (b - 1) / b)
        found.append(Percentile(value, float(scale[1](centre - half)), float(scale[1](centre + half)), approximate))
    return found


def level_samples(parts: Sequence[SteadyWindow]) -> dict[str, list[np.ndarray]]:
    """Per metric (seconds), one array per window: the values its steady requests give (ITL: their gaps)."""
    return {
        "ttft_ms": [np.array([x.ttft_s for _, x in p.requests]) for p in parts],
        "tpot_ms": [np.array([x.tpot_s for _, x in p.requests if not math.isnan(x.tpot_s)]) for p in parts],
        "itl_ms": [np.fromiter(p.itl_us(), dtype=np.int64) / 1e6 for p in parts],
        "e2el_ms": [np.array([x.e2el_s for _, x in p.requests]) for p in parts],
    }
