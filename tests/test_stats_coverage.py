"""The intervals keep their promise: simulate sweeps with a known truth and count coverage.

2,000 synthetic sweeps of a baseline and a candidate with known means; a 95 % interval must
contain the truth 93-97 % of the time (binomial standard error ~0.5 %, so this is +-4 SE).
The library functions are vectorised over sweeps, so this runs in about a second.
"""

from __future__ import annotations

import numpy as np
import pytest

from specsweep.analyse import stats

SWEEPS = 2000
BASE_MEAN, BASE_SD = 60.0, 4.0  # tok/s; CV 6.7 %, like llama.cpp -t 2 on this machine
CAND_MEAN, CAND_SD = 90.0, 3.0  # a faster, steadier speculative configuration
TRUE_SPEEDUP = CAND_MEAN / BASE_MEAN


def _sweeps(runs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.normal(BASE_MEAN, BASE_SD, (SWEEPS, runs)), rng.normal(CAND_MEAN, CAND_SD, (SWEEPS, runs)))


def _covers(low: np.ndarray, high: np.ndarray, truth: float) -> float:
    assert not np.isnan(low).any() and not np.isnan(high).any()
    return float(np.mean((low <= truth) & (truth <= high)))


@pytest.mark.parametrize("runs", [3, 5, 10])
def test_t_interval_covers_the_mean(runs):
    base, cand = _sweeps(runs, seed=runs)
    assert 0.93 <= _covers(*stats.t_interval(base), BASE_MEAN) <= 0.97
    assert 0.93 <= _covers(*stats.t_interval(cand), CAND_MEAN) <= 0.97


@pytest.mark.parametrize("runs", [3, 5, 10])
def test_fieller_interval_covers_the_speedup(runs):
    base, cand = _sweeps(runs, seed=100 + runs)
    assert 0.93 <= _covers(*stats.fieller_ratio_interval(cand, base), TRUE_SPEEDUP) <= 0.97


def test_bootstrap_is_too_narrow_with_five_runs():
    """Why the t and Fieller intervals are the ones shown: the percentile bootstrap under-covers at n=5."""
    base, cand = _sweeps(5, seed=7)
    mean_cover = _covers(*stats.bootstrap_mean_interval(base, resamples=400), BASE_MEAN)
    ratio_cover = _covers(*stats.bootstrap_ratio_interval(cand, base, resamples=400), TRUE_SPEEDUP)
    assert 0.80 < mean_cover < 0.93
    assert 0.80 < ratio_cover < 0.93


def test_welch_rejects_a_true_null_five_percent_of_the_time():
    rng = np.random.default_rng(11)
    a = rng.normal(BASE_MEAN, BASE_SD, (SWEEPS, 5))
    b = rng.normal(BASE_MEAN, 2 * BASE_SD, (SWEEPS, 5))  # same mean, unequal spread
    rate = float(np.mean(stats.welch_p_value(b, a) < stats.ALPHA))
    assert 0.03 <= rate <= 0.07


def test_welch_detects_the_simulated_speedup():
    base, cand = _sweeps(5, seed=13)
    assert float(np.mean(stats.welch_p_value(cand, base) < stats.ALPHA)) > 0.99
