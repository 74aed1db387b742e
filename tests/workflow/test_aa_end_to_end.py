"""A real A/A sweep (config/examples/aa.yaml): a baseline and three configurations with identical flags,
two sessions each. Nothing differs, so nothing may be declared significant; summary.csv must show the
sessions the intervals rest on and the variation between them (issue 21).

The pipeline holds the family-wise error rate at 5 % by Holm's adjustment, so about one A/A sweep in 20
declares a difference by chance (`make bench` measures that rate by simulation, benchmarks/coverage.py).
The sweep stays the evidence, but the test fails only where chance alone would about once in a thousand
sweeps (tests/aa_verdict.py: a Holm-adjusted p below 0.001), and for a conclusion, summary.csv or paper
macros that disagree with each other.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from aa_verdict import problems
from workflow_runs import snakemake

REPO = Path(__file__).resolve().parents[2]
# quiet: its assertions rest on measured speed (a conclusion), so it runs with the machine to itself
pytestmark = [pytest.mark.engine, pytest.mark.quiet]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("aa")
    config = yaml.safe_load((REPO / "config" / "examples" / "aa.yaml").read_text())
    config["benchmark"]["prompts"] = str(REPO / config["benchmark"]["prompts"])
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = snakemake(workdir, "all")
    assert done.returncode == 0, done.stderr[-4000:]
    (workdir / "snakemake.stderr").write_text(done.stderr)
    yield workdir
    shutil.rmtree(workdir, ignore_errors=True)


def test_nothing_differs_beyond_chance(sweep):
    printed = (sweep / "snakemake.stderr").read_text()
    summary = pd.read_csv(sweep / "results" / "summary.csv").set_index("configuration")
    assert problems(summary, printed, (sweep / "results" / "paper" / "macros.tex").read_text()) == []
    if not summary.loc["baseline", "contended_runs"]:  # else the conclusion judges nothing (aa_verdict checks it)
        assert "over 3 comparisons)" in printed
    assert "  sessions: 2 per configuration, the replicates of every interval and test" in printed


def test_summary_shows_sessions_and_between_session_variation(sweep):
    summary = pd.read_csv(sweep / "results" / "summary.csv").set_index("configuration")
    assert list(summary.index) == ["baseline", "same-a", "same-b", "same-c"]  # one row per configuration
    assert (summary["sessions"] == 2).all() and (summary["runs"] == 14).all()
    assert (summary["interval_unit"] == "session").all()
    # 4 configurations x (2 - 1): a session with a contended run leaves the pooled spread (and says so)
    contended = int((summary["contended_runs"] > 0).sum())
    assert (summary["ci_df"] == 4).all() if not contended else (summary["ci_df"] < 4).all()
    assert (
        summary["decode_tok_s_between_session_cv"].notna().all()
        and (summary["decode_tok_s_between_session_cv"] > 0).all()
    )
    assert (summary["decode_tok_s_ci95_low"] > 0).all()
    assert (summary.loc["same-a":, "comparisons"] == 3).all()
    runs = pd.read_csv(sweep / "results" / "runs.csv")
    assert sorted(runs["session"].unique()) == sorted([f"{n}{s}" for n in summary.index for s in ("", "-s2")])
