from __future__ import annotations

import math

import numpy as np
import pytest
from doc_tables import documented_columns
from run_records import runs_of

from specsweep.analyse import drift
from specsweep.plan.config import expand, validate_schema
from specsweep.plan.design import with_end_baseline


def _runs(rates):
    return [
        {"run": i, "client": {"decode_tokens_per_s": r}, "started_at": f"2026-01-01T00:00:0{i}Z"}
        for i, r in enumerate(rates)
    ]


def test_trend_finds_a_steady_slowdown_and_not_noise():
    slowing = [100.0, 97.0, 94.2, 90.8, 88.1, 85.0]
    estimate, low, high, p = drift.trend(slowing, [0] * 6)
    assert estimate == pytest.approx(-3.0 * 100 / np.mean(slowing), rel=0.02)
    assert high < 0 and p < 0.05
    estimate, low, high, p = drift.trend([100.0, 96.0, 101.0, 97.0, 100.5, 96.5], [0] * 6)
    assert low < 0 < high
    assert math.isnan(drift.trend([100.0, 90.0], [0, 0])[1])


def test_trend_compares_a_prompt_with_itself_not_with_the_next_prompt():
    # issue 36 item 6: 7 runs, each a different category, their rates following the categories (a vLLM
    # baseline read -4 % per run, p 0.008): no prompt ran twice, so there is no trend to tell
    categories = [110.0, 104.0, 101.0, 97.0, 95.0, 92.0, 88.0]
    assert all(math.isnan(v) for v in drift.trend(categories, list(range(7))))
    # two passes over the same prompts on a steady machine: no drift; a real 1 % per run slowdown is found
    noise = [1.004, 0.997, 1.002, 0.996, 1.003, 0.999, 1.001, 0.998, 1.003, 0.997, 1.004, 0.998, 1.002, 0.999]
    steady = [c * e for c, e in zip(categories * 2, noise, strict=True)]
    estimate, low, high, _ = drift.trend(steady, list(range(7)) * 2)
    assert low < 0 < high and abs(estimate) < 0.2
    slowing = [r * 0.99**i for i, r in enumerate(steady)]
    estimate, low, high, p = drift.trend(slowing, list(range(7)) * 2)
    assert estimate == pytest.approx(-1.0, abs=0.15) and high < 0 and p < 0.05


def test_report_has_the_bracket_ratio(default_config):
    configurations = with_end_baseline(expand(validate_schema(default_config)), "bracket")
    runs = {name: _runs([60.0, 61.0, 62.0, 61.5, 60.5]) for name in configurations}
    runs["baseline-end"] = _runs([54.0, 55.0, 54.5, 55.5, 54.2])  # the machine got 10 % slower
    frame = drift.report(configurations, runs_of(runs))
    bracket = frame[frame["check"] == "bracket"].iloc[0]
    assert bracket["estimate_pct"] == pytest.approx((54.64 / 61.0 - 1) * 100, rel=1e-3)
    assert bool(bracket["drifted"]) and bracket["ci95_high_pct"] < 0
    assert any("DRIFT bracket baseline-end" in line for line in drift.describe(frame))
    assert len(frame) == len(configurations) + 1


def test_docs_give_every_drift_column_with_the_code_meaning_in_order():
    documented = documented_columns("summary.md", "## drift.csv columns")
    assert list(documented.items()) == list(drift.COLUMNS.items())
