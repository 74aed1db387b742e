from __future__ import annotations

import numpy as np

from specsweep.measure.adaptive import next_step


def test_stops_when_the_interval_is_tight_enough():
    decision = next_step([100.0, 100.5, 99.5, 100.2, 99.8], ci_half_width_pct=2.0, max_runs=20)
    assert not decision.more and "<= target 2.0 %" in decision.reason
    assert decision.half_width_pct < 1.0


def test_continues_while_noisy_and_stops_at_max_runs():
    noisy = [80.0, 120.0, 95.0, 110.0, 90.0]
    assert next_step(noisy, ci_half_width_pct=2.0, max_runs=20).more
    capped = next_step(noisy, ci_half_width_pct=2.0, max_runs=5)
    assert not capped.more and "max_runs=5" in capped.reason


def test_needs_three_runs_for_an_interval():
    assert next_step([100.0, 100.0], ci_half_width_pct=50.0, max_runs=10).more


def test_simulated_sessions_reach_the_target():
    rng = np.random.default_rng(1)
    stops = []
    for _ in range(200):
        rates = list(rng.normal(100, 5, 5))
        while (decision := next_step(rates, ci_half_width_pct=2.0, max_runs=60)).more:
            rates.append(rng.normal(100, 5))
        stops.append(len(rates))
        assert decision.half_width_pct <= 2.0 or len(rates) == 60
    # sd 5 % of the mean: 2 % half-width needs about (1.96 * 5 / 2)^2 ~ 24 runs
    assert 15 <= np.median(stops) <= 35
