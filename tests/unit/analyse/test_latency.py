from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import load_coverage

from specsweep.analyse import latency
from specsweep.analyse.latency import meets_slo, percentile, request_latency, sectioned_percentiles
from specsweep.maths import stats
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
    assert latency.e2el_s == pytest.approx(0.7)  # vLLM's E2EL: to the last token, not the end of the stream
    assert latency.tpot_s == pytest.approx((latency.e2el_s - latency.ttft_s) / 9)  # vLLM's TPOT


def test_single_token_has_no_tpot_and_no_events_is_an_error():
    assert math.isnan(request_latency([300000], tokens=1, e2e_s=0.3).tpot_s)
    with pytest.raises(ValueError):
        request_latency([], tokens=0, e2e_s=0.1)


def test_slo_needs_every_objective():
    latency = request_latency(encode_arrivals([0.15, 0.25]), tokens=3, e2e_s=0.3)  # TPOT 50 ms
    assert meets_slo(latency, {})
    assert meets_slo(latency, {"ttft_ms": 200, "tpot_ms": 50})
    assert not meets_slo(latency, {"ttft_ms": 200, "tpot_ms": 49})
    assert not meets_slo(latency, {"e2e_ms": 249})  # E2EL 250 ms (the stream ended at 300 ms)
    assert meets_slo(latency, {"e2e_ms": 251})


def test_percentiles_follow_vllms_rule_numpys_default_linear():
    rng = np.random.default_rng(1)
    windows = [rng.exponential(1.0, size) for size in (30, 45, 20)]
    found = sectioned_percentiles(windows)
    pooled = np.concatenate(windows)
    for q, value in zip((50, 90, 99), found, strict=True):
        assert value.value == np.percentile(pooled, q)  # vllm/benchmarks/serve.py: np.percentile(ttfts, p)
        if q != 50:  # 95 values: the median is an order statistic under either rule
            assert value.value != np.percentile(pooled, q, method="inverted_cdf")  # the earlier rule
        assert value.low < value.value < value.high
        assert percentile(pooled, q) == value.value


def test_sectioning_interval_is_the_pooled_percentile_plus_minus_t_times_the_window_spread():
    windows = [np.arange(1.0, 101.0) + shift for shift in (0.0, 2.0, 7.0)]
    (found,) = sectioned_percentiles(windows, percentiles=(50,))
    each = np.log([np.percentile(w, 50) for w in windows])
    value = np.percentile(np.concatenate(windows), 50)
    half = stats.t_critical(2) * math.sqrt(np.sum((each - math.log(value)) ** 2) / 2 / 3)
    assert (found.low, found.high) == pytest.approx((value * math.exp(-half), value * math.exp(half)))
    assert not found.approximate  # 3 windows, 50 values on each side of the median in every window
    (tail,) = sectioned_percentiles(windows, percentiles=(99,))
    assert tail.approximate  # 1 value beyond p99 per window: the per-window estimates are far from normal


def test_few_windows_give_wide_intervals_but_never_a_negative_latency():
    (found,) = sectioned_percentiles([[1.0, 1.1, 1.2], [5.0, 5.5, 6.0]], percentiles=(50,))
    assert 0 < found.low < found.value < found.high and found.approximate
    (linear,) = sectioned_percentiles([[0.0, 0.0, 1.0], [0.0, 2.0, 3.0]], percentiles=(50,))
    assert linear.low < 0 < linear.high  # a zero percentile in a window: the linear scale, as it must


def test_one_window_has_no_interval_and_empty_windows_are_nan():
    found = sectioned_percentiles([[1.0, 2.0, 3.0]])[0]
    assert found.value == 2.0 and math.isnan(found.low) and found.approximate
    assert all(math.isnan(p.value) for p in sectioned_percentiles([[], []]))


def test_a_level_holds_a_bounded_number_of_values(monkeypatch):
    monkeypatch.setattr(latency, "MAX_VALUES_PER_LEVEL", 3000)
    rng = np.random.default_rng(2)
    windows = [rng.exponential(1.0, 100_000) for _ in range(3)]
    kept = latency._bounded(windows)
    assert [k.size for k in kept] == [1000, 1000, 1000]
    (found,) = sectioned_percentiles(windows, percentiles=(90,))
    assert found.value == pytest.approx(math.log(10), rel=0.06)  # the exponential's p90, from the subsample


def test_percentile_intervals_cover_by_simulation():
    # the fast version of benchmarks/load_coverage.py: a slow first window (the warmup), bursty speculative
    # ITL, per-request effects; the earlier method (all windows, bootstrap) under-covers, sectioning does not
    found = load_coverage.percentile_coverage(trials=80, windows=3, requests=64, resamples=100)
    for name, result in found.items():
        if result["labelled_approximate"] < 0.5:
            assert result["after"] >= 0.88, name  # 95 % nominal, 80 trials: 2.5 standard errors below
    assert np.mean([r["before"] for r in found.values()]) < 0.88


def test_goodput_speedup_and_crossover_intervals_cover_by_simulation():
    assert load_coverage.goodput_coverage(trials=80, windows=3, requests=32)["after"] >= 0.88
    assert load_coverage.speedup_coverage(trials=300, windows=3)["after (paired)"] >= 0.91
    crossing = load_coverage.crossover_coverage(trials=80, windows=3)
    assert crossing["bracket_holds_truth"] >= 0.95 and crossing["resolved"] > 0.5
