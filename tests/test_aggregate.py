from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from doc_tables import documented_columns
from run_records import runs_of

from specsweep.analyse.aggregate import COLUMNS, summarise, write_csv
from specsweep.plan.config import expand, validate_schema


def _run(index, rate, text="t0", spec=None):
    return {
        "run": index,
        "prompt_index": 0,
        "tokens": 500,
        "text_sha256": text,
        "client": {"decode_tokens_per_s": rate, "ttft_s": 0.1, "itl_median_s": 0.015},
        "engine": {"timings": {"predicted_per_second": rate * 1.001}},
        "speculation": spec,
    }


def _sweep(default_config):
    configurations = expand(validate_schema(default_config))
    spec = {"drafted": 400, "accepted": 300, "verify_steps": 100, "emitted": 500}
    runs = {name: [_run(i, 60.0 + i) for i in range(5)] for name in configurations}
    runs["ngram-m8"] = [_run(i, 90.0 + i, text="t0", spec=spec) for i in range(5)]
    runs["draft-model"] = [_run(i, 30.0, text="other", spec=spec) for i in range(5)]
    return summarise(configurations, runs_of(runs), {})


def test_statistics_speedup_and_acceptance(default_config):
    summary = _sweep(default_config).set_index("configuration")
    base = summary.loc["baseline"]
    assert base["decode_tok_s_mean"] == pytest.approx(62.0)
    assert base["decode_tok_s_std"] == pytest.approx(math.sqrt(2.5))
    # t(0.975, 4) = 2.7764: half-width 2.7764 * sqrt(2.5) / sqrt(5)
    assert base["decode_tok_s_ci95_high"] - base["decode_tok_s_mean"] == pytest.approx(
        2.7764 * math.sqrt(0.5), rel=1e-4
    )
    ngram = summary.loc["ngram-m8"]
    assert ngram["speedup"] == pytest.approx(92.0 / 62.0)
    assert ngram["speedup_pct"] == pytest.approx((92.0 / 62.0 - 1) * 100)
    assert ngram["acceptance_rate"] == pytest.approx(0.75)
    assert ngram["accept_length"] == pytest.approx(1 + 1500 / 500)
    assert bool(ngram["text_matches_baseline"]) and not bool(summary.loc["draft-model", "text_matches_baseline"])
    assert ngram["--spec-ngram-simple-size-m"] == 8 and math.isnan(base["--spec-ngram-simple-size-m"])


def test_csv_is_byte_identical_when_rewritten(default_config, tmp_path):
    from specsweep.analyse import stats

    write_csv(_sweep(default_config), tmp_path / "a.csv")
    stats._means_of.cache_clear()  # recompute the seeded bootstrap draws, not reuse them
    stats._indices.cache_clear()
    write_csv(_sweep(default_config), tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_docs_give_every_summary_column_with_the_code_meaning_in_order():
    assert documented_columns("summary.md", "# summary.csv columns") == COLUMNS
    assert list(documented_columns("summary.md", "# summary.csv columns")) == list(COLUMNS)


def test_draft_counts_fall_back_to_the_server_log(default_config):
    import pandas as pd

    from specsweep.analyse.aggregate import fill_speculation_from_logs

    frame = _sweep(default_config)
    # ngram-m3 has no speculation fields in its run records: its log's run rows give the counts
    profile = pd.DataFrame(
        {
            "phase": ["warmup", "run", "run"],
            "source": "llamacpp",
            "draft_generated": [5, 400, 420],
            "draft_accepted": [1, 361, 380],
        }
    )
    filled = fill_speculation_from_logs(frame, {"ngram-m3": profile}).set_index("configuration")
    assert filled.loc["ngram-m3", "drafted"] == 820 and filled.loc["ngram-m3", "accepted"] == 741
    assert filled.loc["ngram-m3", "speculation_source"] == "server log"
    assert filled.loc["ngram-m8", "drafted"] == 2000  # response fields win where present
    assert pd.isna(filled.loc["baseline", "drafted"])


# Run counts of a sweep's configurations, the baseline first: the baseline's own count, the same again,
# others (above 8 runs, rows must be averaged alike), fewer than 3 (no interval), 1 (no spread), 0 (missing).
RUN_COUNTS = [5, 5, 5, 7, 7, 7, 100, 3, 2, 1, 0, 4, 5, 30, 5, 12, 12, 12, 30]


def _varied_sweep() -> tuple[dict, dict]:
    from specsweep.plan.config import Configuration

    rng = np.random.default_rng(5)
    configurations = {
        f"c{i}": Configuration(
            name=f"c{i}",
            engine="llama",
            kind="llamacpp",
            baseline=i == 0,
            args={"--spec-ngram-simple-size-m": i},
            env={},
            axes={"--spec-ngram-simple-size-m": i},
            group="c",
        )
        for i in range(len(RUN_COUNTS))
    }
    spec = {"drafted": 400, "accepted": 300, "verify_steps": 100}
    rates = {
        name: list(rng.normal(60.0 + 3 * i, 1 + i % 4, n))
        for i, (name, n) in enumerate(zip(configurations, RUN_COUNTS, strict=True))
    }
    rates["c2"] = [61.5] * 5  # zero variance
    rates["c11"] = [70.0, math.nan, math.nan, 71.0, 73.5, 69.0]
    runs = {
        name: [_run(i, rate, spec=spec) for i, rate in enumerate(values)] for name, values in rates.items() if values
    }
    runs["c11"][1]["client"]["decode_tokens_per_s"] = None  # runs that reported no rate
    return configurations, runs


@pytest.mark.parametrize("block_rows", [None, 2])
def test_a_sweep_gives_every_configuration_the_numbers_it_gets_alone(monkeypatch, block_rows):
    """summarise computes configurations with equal run counts together (stats.describe_many), in blocks of
    rows; each row must equal the one from a sweep of that configuration and the baseline only."""
    from specsweep.analyse import stats

    configurations, runs = _varied_sweep()
    if block_rows:  # blocks of 2 rows: several blocks per run count, and the last one short
        monkeypatch.setattr(stats, "BLOCK_BYTES", block_rows * 8 * stats.BOOTSTRAP_RESAMPLES)
    together = summarise(configurations, runs_of(runs), {})
    rows = []
    for name in configurations:
        other = "c1" if name == "c0" else name  # the baseline's row from a sweep of two as well
        pair = summarise({"c0": configurations["c0"], other: configurations[other]}, runs_of(runs), {})
        rows.append(pair[pair["configuration"] == name])
    alone = pd.concat(rows)
    pd.testing.assert_frame_equal(together.reset_index(drop=True), alone.reset_index(drop=True), check_exact=True)
    assert together["status"].tolist().count("missing") == 1 and together["runs"].min() == 0


def test_an_unknown_draft_count_is_not_summed_as_zero(default_config):
    """SGLang <= 0.5.4 without its server args reports verify steps but no draft count (drafted None)."""
    from specsweep.analyse import costmodel

    configurations = expand(validate_schema(default_config))
    runs = {name: [_run(i, 60.0 + i) for i in range(5)] for name in configurations}
    unknown = {"drafted": None, "accepted": 300, "verify_steps": 100, "emitted": 500}
    runs["ngram-m8"] = [_run(i, 90.0 + i, spec=unknown) for i in range(5)]
    ngram = summarise(configurations, runs_of(runs), {}).set_index("configuration").loc["ngram-m8"]
    assert pd.isna(ngram["drafted"]) and pd.isna(ngram["acceptance_rate"])
    assert ngram["accept_length"] == pytest.approx(1 + 1500 / 500)
    assert costmodel.counts_of(configurations["ngram-m8"], runs_of(runs)["ngram-m8"]) is None
