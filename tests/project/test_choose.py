"""benchmarks/choose.py: tune_speculative_k's rule as reimplemented, and a small campaign of each method."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import choose


def test_the_rule_takes_the_smaller_k_within_its_relative_tolerance():
    runs = {0: [100.0, 100.0, 100.0], 2: [130.0, 130.0, 130.0], 3: [130.5, 130.5, 130.5]}
    assert choose.tune_choice(runs) == (2, pytest.approx(1.30))
    assert choose.tune_choice(runs, tolerance=0.0) == (3, pytest.approx(1.305))  # without it: the fastest


def test_the_rule_penalises_the_spread_of_a_k():
    # k 3's median is higher, but its MAD costs it 1.4826 x 5 = 7.4 of its 135
    runs = {0: [100.0, 100.0, 100.0], 2: [130.0, 130.0, 130.0], 3: [130.0, 135.0, 140.0]}
    assert choose.tune_choice(runs) == (2, pytest.approx(1.30))


def test_the_rule_refuses_an_unstable_k_or_too_few_runs():
    assert choose.tune_choice({0: [100.0, 100.0, 100.0], 1: [50.0, 100.0, 150.0]}) is None
    assert choose.tune_choice({0: [100.0, 100.0], 1: [110.0, 110.0]}) is None


def test_the_true_best_moves_down_with_the_load():
    truth = choose.true_rates(0.7)
    best = [max(choose.GRID, key=lambda k, level=level: truth(k)[level]) for level in range(len(choose.LEVELS))]
    assert best[0] in (2, 3) and best[-1] == 0 and best == sorted(best, reverse=True)


def test_a_small_run_reports_every_method_and_level():
    result = choose.measure(20, "acceptance 0.6")
    methods = result["methods"]
    assert set(methods) == {*(name for pair in choose.GOALS for name in pair), choose.rule(1), choose.UNTIED}
    for found in methods.values():
        assert set(found["levels"]) == set(choose.LEVELS)
        assert all(0 <= f["p_best"] <= 1 for f in found["levels"].values())
    # the rule gives no interval; specsweep's confirmation does, within its budget
    assert math.isnan(methods[choose.rule(1)]["levels"]["c1"]["coverage"])
    for budget in choose.BUDGETS:
        assert not math.isnan(methods[choose.ours(budget)]["levels"]["c1"]["coverage"])
        assert methods[choose.ours(budget)]["sessions"] <= budget + 1
        assert methods[choose.rule(budget // len(choose.GRID))]["sessions"] == budget
    assert methods[choose.rule(1)]["sessions"] == len(choose.GRID)
    rows = 1 + len(methods) * (1 + len(choose.LEVELS)) + 3 + len(choose.GOALS)  # + specsweep's unconfirmed bias
    assert len(choose.lines([result])) == rows
