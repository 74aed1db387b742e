from __future__ import annotations

import math

import pytest

from specsweep.measure.client import timings_from_arrivals


def test_decode_rate_excludes_the_first_token():
    # first token at 0.5 s, then 10 tokens one per 0.1 s: 10 tokens over 1.0 s after the first
    arrivals = [0.5 + 0.1 * i for i in range(11)]
    timings = timings_from_arrivals(arrivals, tokens=11, total_s=1.6)
    assert timings.ttft_s == pytest.approx(0.5)
    assert timings.decode_s == pytest.approx(1.0)
    assert timings.decode_tokens_per_s == pytest.approx(10.0)
    assert timings.itl_median_s == pytest.approx(0.1)


def test_bursts_count_tokens_not_events():
    # speculative decoding: 3 events carrying 1 + 4 + 4 tokens
    timings = timings_from_arrivals([0.2, 0.4, 0.6], tokens=9, total_s=0.7)
    assert timings.decode_tokens_per_s == pytest.approx(8 / 0.4)
    assert timings.content_events == 3


def test_single_token_has_no_rate():
    timings = timings_from_arrivals([0.3], tokens=1, total_s=0.3)
    assert math.isnan(timings.decode_tokens_per_s)


def test_no_events_is_an_error():
    with pytest.raises(ValueError):
        timings_from_arrivals([], tokens=0, total_s=0.1)
