from __future__ import annotations

import math

import numpy as np
import pytest

from specsweep import drift
from specsweep.config import expand, validate_schema


def _runs(rates):
    return [{"run": i, "client": {"decode_tokens_per_s": r}, "started_at": f"2026-01-01T00:00:0{i}Z"}
            for i, r in enumerate(rates)]


def test_trend_finds_a_steady_slowdown_and_not_noise():
    slowing = [100.0, 97.0, 94.2, 90.8, 88.1, 85.0]
    estimate, low, high, p = drift.trend(slowing)
    assert estimate == pytest.approx(-3.0 * 100 / np.mean(slowing), rel=0.02)
    assert high < 0 and p < 0.05
    estimate, low, high, p = drift.trend([100.0, 96.0, 101.0, 97.0, 100.5, 96.5])
    assert low < 0 < high
    assert math.isnan(drift.trend([100.0, 90.0])[1])


def test_bracket_adds_the_end_baseline_ordered_after_everything(default_config):
    configurations = expand(validate_schema(default_config))
    assert drift.with_end_baseline(configurations, "sequential") is configurations
    bracketed = drift.with_end_baseline(configurations, "bracket")
    end = bracketed["baseline-end"]
    assert not end.baseline and end.args == configurations["baseline"].args and list(bracketed)[-1] == "baseline-end"
    inputs = drift.runs_before("baseline-end", bracketed, [0, 1])
    assert "results/baseline/runs/run_1.json" in inputs and "results/draft-model/runs/run_0.json" in inputs
    assert not any(path.startswith("results/baseline-end/") for path in inputs)
    assert drift.runs_before("ngram-m3", bracketed, [0, 1]) == []
    with pytest.raises(ValueError, match="benchmark/order"):
        drift.with_end_baseline(configurations, "interleaved")


def test_report_has_the_bracket_ratio(default_config):
    configurations = drift.with_end_baseline(expand(validate_schema(default_config)), "bracket")
    runs = {name: _runs([60.0, 61.0, 62.0, 61.5, 60.5]) for name in configurations}
    runs["baseline-end"] = _runs([54.0, 55.0, 54.5, 55.5, 54.2])  # the machine got 10 % slower
    frame = drift.report(configurations, runs)
    bracket = frame[frame["check"] == "bracket"].iloc[0]
    assert bracket["estimate_pct"] == pytest.approx((54.64 / 61.0 - 1) * 100, rel=1e-3)
    assert bool(bracket["drifted"]) and bracket["ci95_high_pct"] < 0
    assert any("DRIFT bracket baseline-end" in line for line in drift.describe(frame))
    assert len(frame) == len(configurations) + 1


def test_the_baseline_session_is_scheduled_first(default_config):
    configurations = drift.with_end_baseline(expand(validate_schema(default_config)), "bracket")
    priorities = {name: drift.session_priority(name, configurations) for name in configurations}
    assert priorities["baseline"] > max(p for name, p in priorities.items() if name != "baseline")
