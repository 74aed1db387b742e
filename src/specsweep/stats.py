"""Descriptive statistics of repeated runs, with the interval method stated.

The 95 % confidence interval of a mean is Student's t-interval (``scipy.stats.t``):
mean ± t(0.975, n-1) · s/√n. It assumes roughly normal run-to-run noise; with n < 3 it
is reported as NaN because an interval from two points is not informative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
MIN_RUNS_FOR_CI = 3


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    std: float
    cv: float
    minimum: float
    maximum: float
    median: float
    ci_low: float
    ci_high: float


def describe(values: Sequence[float]) -> Summary:
    data = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    n = len(data)
    if n == 0:
        nan = float("nan")
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan)
    mean = float(data.mean())
    std = float(data.std(ddof=1)) if n > 1 else float("nan")
    low = high = float("nan")
    if n >= MIN_RUNS_FOR_CI:
        half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1)) * std / math.sqrt(n)
        low, high = mean - half, mean + half
    return Summary(n=n, mean=mean, std=std, cv=std / mean if mean else float("nan"),
                   minimum=float(data.min()), maximum=float(data.max()), median=float(np.median(data)),
                   ci_low=low, ci_high=high)
