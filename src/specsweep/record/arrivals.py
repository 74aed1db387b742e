"""How a request record keeps its token arrivals: delta-encoded integer microseconds.

The first value is send -> first token, each next one the gap to the previous event that carried
generated text, so every latency can be recomputed from the archive (``specsweep.analyse.latency``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence


def encode_arrivals(arrivals_s: Sequence[float]) -> list[int]:
    """Arrival times (seconds after sending) as delta-encoded integer microseconds."""
    micros = [round(t * 1e6) for t in arrivals_s]
    return [b - a for a, b in itertools.pairwise([0, *micros])]


def decode_arrivals(deltas_us: Sequence[int]) -> list[float]:
    return [t / 1e6 for t in itertools.accumulate(deltas_us)]
