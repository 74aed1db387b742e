from __future__ import annotations

import math

import numpy as np
import pytest

from specsweep.analyse.latency import (
    meets_slo,
    pooled_percentiles,
    request_latency,
)
from specsweep.record.arrivals import decode_arrivals, encode_arrivals


def test_arrivals_round_trip_to_the_microsecond():
    arrivals = [0.1234567, 0.2, 0.2000004, 1.5]
    deltas = encode_arrivals(arrivals)
    assert deltas == [123457, 76543, 0, 1300000]
    assert decode_arrivals(deltas) == pytest.approx(arrivals, abs=1e-6)
    assert all(isinstance(d, int) for d in deltas)


def test_request_latency_definitions():
    # first token at 0.3 s, then 4 events 0.1 s apart carrying 9 more tokens; the response ends at 0.8 s
    latency = request_latency(encode_arrivals([0.3, 0.4, 0.5, 0.6, 0.7]), tokens=10, e2e_s=0.8)
    assert latency.ttft_s == pytest.approx(0.3)
    assert latency.tpot_s == pytest.approx(0.4 / 9)
    assert latency.itl_s == pytest.approx((0.1, 0.1, 0.1, 0.1))
    assert latency.decode_tokens_per_s == pytest.approx(9 / 0.4)
    assert latency.e2e_s == 0.8


def test_single_token_has_no_tpot_and_no_events_is_an_error():
    assert math.isnan(request_latency([300000], tokens=1, e2e_s=0.3).tpot_s)
    with pytest.raises(ValueError):
        request_latency([], tokens=0, e2e_s=0.1)


def test_slo_needs_every_objective():
    latency = request_latency(encode_arrivals([0.15, 0.25]), tokens=3, e2e_s=0.3)  # TPOT 50 ms
    assert meets_slo(latency, {})
    assert meets_slo(latency, {"ttft_ms": 200, "tpot_ms": 50})
    assert not meets_slo(latency, {"ttft_ms": 200, "tpot_ms": 49})
    assert not meets_slo(latency, {"e2e_ms": 299})


def test_pooled_percentile_is_numpys_inverted_cdf_of_all_windows():
    rng = np.random.default_rng(1)
    windows = [rng.exponential(1.0, size) for size in (30, 45, 20)]
    found = pooled_percentiles(windows)
    pooled = np.concatenate(windows)
    for q, value in zip((50, 90, 99), found, strict=True):
        assert value.value == np.percentile(pooled, q, method="inverted_cdf")
        assert value.low <= value.value <= value.high


def test_bootstrap_over_windows_covers_the_true_percentile():
    # windows whose level differs (server state): the interval must reflect the spread between windows
    rng = np.random.default_rng(7)
    covered = 0
    trials = 200
    for trial in range(trials):
        windows = [rng.normal(10 + rng.normal(0, 1), 1, 50) for _ in range(10)]
        found = pooled_percentiles(windows, percentiles=(50,), resamples=500, seed=trial)[0]
        covered += found.low <= 10 <= found.high
    assert covered / trials > 0.8  # percentile bootstrap with 10 windows: roughly nominal, a bit below


def test_one_window_has_a_zero_width_interval_and_empty_windows_are_nan():
    found = pooled_percentiles([[1.0, 2.0, 3.0]])[0]
    assert found.low == found.value == found.high == 2.0
    assert all(math.isnan(p.value) for p in pooled_percentiles([[], []]))
