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


def _sweep(default_config, profiles=None):
    configurations = expand(validate_schema(default_config))
    spec = {"drafted": 400, "accepted": 300, "verify_steps": 100, "emitted": 500}
    runs = {name: [_run(i, 60.0 + i) for i in range(5)] for name in configurations}
    runs["ngram-m8"] = [_run(i, 90.0 + i, text="t0", spec=spec) for i in range(5)]
    runs["draft-model"] = [_run(i, 30.0, text="other", spec=spec) for i in range(5)]
    return summarise(configurations, runs_of(runs), {}, profiles)


def test_statistics_speedup_and_acceptance(default_config):
    """One session of one prompt run 5 times: the unit is the pass (each run), on the log scale, with the
    spread pooled over the sweep's configurations (analyse/replicates.py)."""
    from scipy import stats as scipy_stats

    summary = _sweep(default_config).set_index("configuration")
    base = summary.loc["baseline"]
    logs = np.log(60.0 + np.arange(5))
    assert base["decode_tok_s_mean"] == pytest.approx(math.exp(logs.mean()))
    assert base["decode_tok_s_std"] == pytest.approx(math.sqrt(2.5))
    # pooled: four configurations at 60..64, ngram-m8 at 90..94, draft-model constant; df 4 each
    ngram_logs = np.log(90.0 + np.arange(5))
    squares = 4 * ((logs - logs.mean()) ** 2).sum() + ((ngram_logs - ngram_logs.mean()) ** 2).sum()
    df = 4 * 6
    half = scipy_stats.t.ppf(0.975, df) * math.sqrt(squares / df) / math.sqrt(5)
    assert base["decode_tok_s_ci95_high"] == pytest.approx(math.exp(logs.mean() + half), rel=1e-9)
    assert base["decode_tok_s_ci95_low"] == pytest.approx(math.exp(logs.mean() - half), rel=1e-9)
    assert base["interval_unit"] == "pass" and base["ci_df"] == df
    assert "launch-to-launch variation not measured; nothing declared" in base["warnings"]
    ngram = summary.loc["ngram-m8"]
    assert ngram["speedup"] == pytest.approx(math.exp(ngram_logs.mean() - logs.mean()))
    assert ngram["speedup_pct"] == pytest.approx((ngram["speedup"] - 1) * 100)
    # one session: the within-launch test is reported raw, and declares nothing
    assert ngram["comparisons"] == 5 and ngram["speedup_p_value"] < 0.05
    assert math.isnan(ngram["speedup_p_holm"]) and pd.isna(ngram["significant"])
    assert ngram["acceptance_rate"] == pytest.approx(0.75)
    assert ngram["accept_length"] == pytest.approx(1 + 1500 / 500)
    assert bool(ngram["text_matches_baseline"]) and not bool(summary.loc["draft-model", "text_matches_baseline"])
    assert ngram["--spec-ngram-simple-size-m"] == 8 and math.isnan(base["--spec-ngram-simple-size-m"])


def test_csv_is_byte_identical_when_rewritten(default_config, tmp_path):
    write_csv(_sweep(default_config), tmp_path / "a.csv")
    write_csv(_sweep(default_config), tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_docs_give_every_summary_column_with_the_code_meaning_in_order():
    assert documented_columns("summary.md", "# summary.csv columns") == COLUMNS
    assert list(documented_columns("summary.md", "# summary.csv columns")) == list(COLUMNS)


def test_draft_counts_fall_back_to_the_server_log(default_config):
    import pandas as pd

    # ngram-m3 has no speculation fields in its run records: its log's run rows give the counts
    profile = pd.DataFrame(
        {
            "phase": ["warmup", "run", "run"],
            "source": "llamacpp",
            "draft_generated": [5, 400, 420],
            "draft_accepted": [1, 361, 380],
        }
    )
    filled = _sweep(default_config, {"ngram-m3": profile, "ngram-m8": profile}).set_index("configuration")
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


def test_a_row_depends_on_the_others_only_through_the_pooled_spread():
    """Point estimates of a configuration are its own; its interval widths use the sweep's pooled spread
    (one launch-to-launch sigma for every configuration), so they change with the sweep, in proportion."""
    configurations, runs = _varied_sweep()
    together = summarise(configurations, runs_of(runs), {}).set_index("configuration")
    for name in ["c3", "c7", "c13"]:
        pair = summarise({"c0": configurations["c0"], name: configurations[name]}, runs_of(runs), {})
        alone = pair.set_index("configuration").loc[name]
        assert together.loc[name, "decode_tok_s_mean"] == alone["decode_tok_s_mean"]
        assert together.loc[name, "speedup"] == alone["speedup"]
        assert together.loc[name, "ci_df"] > alone["ci_df"]
    assert together["status"].tolist().count("missing") == 1 and together["runs"].min() == 0
    assert together["comparisons"].max() == 17  # 18 candidates, one without runs: no test


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


def test_each_sessions_launch_warnings_reach_the_summary_once_a_later_session_named():
    """A launch record's warning (re-measured after a node failed, a host beyond loopback) is the row's
    too: summary.csv is where the conclusion and a reader look (docs/summary.md, warnings)."""
    from specsweep.analyse.aggregate import launch_warnings
    from specsweep.record.results import Launch

    def launch(*warnings: str) -> Launch:
        return Launch({}, [], 0, "127.0.0.1", {}, {}, "t", warnings=list(warnings))

    launches = {"cfg": launch("re-measured after a failed attempt: node node1 failed"), "cfg-s2": launch("a", "a")}
    assert launch_warnings(["cfg", "cfg-s2", "cfg-s3"], launches) == [
        "re-measured after a failed attempt: node node1 failed",
        "cfg-s2: a",
    ]
    assert launch_warnings(["cfg"], {}) == []
