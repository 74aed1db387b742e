from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from specsweep.maths import stats


def test_describe_t_interval_matches_the_textbook():
    summary = stats.describe([60.0, 61.0, 62.0, 63.0, 64.0])
    assert summary.mean == pytest.approx(62.0)
    # t(0.975, 4) = 2.7764; s = sqrt(2.5)
    assert summary.ci_high - summary.mean == pytest.approx(2.7764 * math.sqrt(2.5) / math.sqrt(5), rel=1e-4)
    assert summary.boot_low < summary.mean < summary.boot_high
    assert summary.boot_low >= 60.0 and summary.boot_high <= 64.0  # a bootstrap mean stays within the data


def test_no_interval_below_three_runs():
    summary = stats.describe([60.0, 70.0])
    assert math.isnan(summary.ci_low) and math.isnan(summary.boot_low)
    assert any("only 2 run" in w for w in stats.warnings_for(summary))


def test_resampling_is_seeded():
    data = [88.1, 92.4, 87.5, 96.9, 90.2]
    base = [60.1, 62.3, 59.8, 63.0, 61.7]
    first = stats.describe(data), stats.ratio(data, base)
    # the resampling draws are cached per run count: clear them so the draws really happen again
    stats._means_of.cache_clear()
    stats._indices.cache_clear()
    assert (stats.describe(data), stats.ratio(data, base)) == first
    # the seed is what makes it repeatable: two seeds with few resamples disagree
    one = stats.bootstrap_mean_interval(np.asarray(data), resamples=30, seed=1)
    two = stats.bootstrap_mean_interval(np.asarray(data), resamples=30, seed=2)
    assert (float(one[0]), float(one[1])) != (float(two[0]), float(two[1]))


def test_fieller_agrees_with_the_delta_method_when_noise_is_small():
    rng = np.random.default_rng(0)
    x, y = rng.normal(90, 0.9, 50), rng.normal(60, 0.6, 50)
    low, high = stats.fieller_ratio_interval(x, y)
    r = x.mean() / y.mean()
    se = r * math.sqrt(x.var(ddof=1) / 50 / x.mean() ** 2 + y.var(ddof=1) / 50 / y.mean() ** 2)
    assert float(low) == pytest.approx(r - 1.985 * se, rel=2e-3)
    assert float(high) == pytest.approx(r + 1.985 * se, rel=2e-3)


def test_fieller_is_asymmetric_and_unbounded_when_the_reference_is_near_zero():
    low, high = stats.fieller_ratio_interval(np.array([90.0, 95, 85]), np.array([1.0, 30, 60]))
    assert math.isnan(float(low)) and math.isnan(float(high))
    low, high = stats.fieller_ratio_interval(np.array([90.0, 95, 85, 92]), np.array([50.0, 62, 58, 70]))
    r = 90.5 / 60.0
    assert (high - r) > (r - low) > 0  # a ratio's interval leans towards larger values


def test_speedup_significance_and_warnings():
    base = [60.1, 62.3, 59.8, 63.0, 61.7]
    fast = stats.ratio([90.0, 92.0, 91.0, 89.5, 90.5], base)
    assert fast.significant and not fast.straddles_one and fast.ci_low > 1.4
    same = stats.ratio([61.0, 63.5, 58.9, 62.2, 60.0], base)
    assert same.significant is False and same.straddles_one
    assert stats.ratio([61.0], base).significant is None  # one run: no test, neither yes nor no
    warnings = stats.warnings_for(stats.describe([61.0, 63.5, 58.9, 62.2, 60.0]), same)
    assert len(warnings) == 1 and "straddles 1" in warnings[0]
    noisy = stats.describe([40.0, 60.0, 80.0])
    assert any("noisy: CV" in w for w in stats.warnings_for(noisy))


def test_summary_carries_speedup_ci_p_value_and_warnings(default_config):
    from run_records import runs_of

    from specsweep.analyse import replicates
    from specsweep.analyse.aggregate import summarise, warning_lines
    from specsweep.plan.config import expand, validate_schema

    configurations = expand(validate_schema(default_config))

    def run(index, rate):
        return {
            "run": index,
            "prompt_index": 0,
            "tokens": 500,
            "text_sha256": "t",
            "speculation": None,
            "client": {"decode_tokens_per_s": rate, "ttft_s": 0.1, "itl_median_s": 0.015},
            "engine": {},
        }

    base = [60.1, 62.3, 59.8, 63.0, 61.7]
    runs = {name: [run(i, r) for i, r in enumerate(base)] for name in configurations}
    runs["ngram-m8"] = [run(i, r) for i, r in enumerate([90.0, 92.0, 91.0, 89.5, 90.5])]
    runs["ngram-m3"] = [run(i, r) for i, r in enumerate([61.0, 63.5, 58.9])]
    runs["draft-model"] = [run(i, r) for i, r in enumerate([30.0, 45.0])]
    summary = summarise(configurations, runs_of(runs), {}).set_index("configuration")
    fast = summary.loc["ngram-m8"]
    assert fast["speedup_ci95_low"] < fast["speedup"] < fast["speedup_ci95_high"]
    # one launch each: the within-launch test declares nothing, and says so
    assert fast["speedup_p_value"] < 0.05 and pd.isna(fast["speedup_p_holm"]) and pd.isna(fast["significant"])
    assert fast["warnings"] == replicates.ONE_SESSION_NOTE
    assert "straddles 1" in summary.loc["ngram-m3", "warnings"]
    assert pd.isna(summary.loc["baseline", "significant"])
    lines = warning_lines(summary.reset_index())
    assert "unit = pass" in lines[0] and "Holm" in lines[0]
    assert any(line.startswith("WARNING ngram-m3:") for line in lines)


def test_a_configuration_without_runs_says_so():
    assert stats.warnings_for(stats.describe([])) == ["no runs"]


def test_a_short_baseline_is_named_as_the_reason_for_no_speedup_ci():
    candidate = [90.0, 92.0, 91.0, 93.0, 89.0]
    reasons = stats.warnings_for(stats.describe(candidate), stats.ratio(candidate, [60.0, 61.0]))
    assert any("baseline has only 2 run(s)" in r for r in reasons)
    assert not any("not clearly non-zero" in r for r in reasons)


def test_every_row_of_a_batch_is_resampled_as_it_would_be_alone():
    """One seeded draw per run count serves every row: a row's bootstrap means are the plain definition's
    (resample its runs with the draw, average each resample) bit for bit, however many rows share a gather."""
    rng = np.random.default_rng(8)
    reference = rng.normal(60, 5, 4)
    for runs in (3, 5, 12, 100):
        rows = rng.normal(60, 5, (7, runs))
        draws = np.random.default_rng(stats.BOOTSTRAP_SEED)
        candidate = draws.integers(0, runs, size=(1000, runs))
        after = draws.integers(0, 4, size=(1000, 4))  # in a speedup the reference draws after the candidate
        expected = np.stack([row[candidate].mean(axis=-1) for row in rows])
        assert np.array_equal(stats._bootstrap_means(rows, (), 1000, stats.BOOTSTRAP_SEED), expected)
        assert np.array_equal(
            stats._bootstrap_means(reference, (runs,), 1000, stats.BOOTSTRAP_SEED), reference[after].mean(axis=-1)
        )


def test_welch_p_value_is_scipys_welch_t_test():
    """Bit for bit, so summary.csv's p-values are the ones scipy.stats.ttest_ind gave one configuration at a time."""
    from scipy.stats import ttest_ind

    rng = np.random.default_rng(9)
    for nx, ny in ((2, 2), (3, 5), (5, 5), (12, 100)):
        x, y = rng.normal(60, rng.uniform(0.1, 9, (40, 1)), (40, nx)), rng.normal(61, 4, ny)
        assert stats.welch_p_value(x, y).tolist() == [ttest_ind(row, y, equal_var=False).pvalue for row in x]
    identical = stats.welch_p_value(np.array([[60.0] * 5, [61.0] * 5]), np.array([60.0] * 5))
    assert math.isnan(identical[0]) and identical[1] == 0.0  # no spread: equal means say nothing, others differ
