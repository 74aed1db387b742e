"""A real A/A sweep (config/examples/aa.yaml): a baseline and three configurations with identical flags,
two sessions each. Nothing differs, so nothing may be declared significant; summary.csv must show the
sessions the intervals rest on and the variation between them (issue 21).

The family-wise error rate is held at 5 % by Holm's adjustment, so this test can fail by chance about
once in 20 sweeps on a quiet machine (benchmarks/coverage.py measures that rate); a failure that repeats
is a real defect.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_runs import snakemake

REPO = Path(__file__).resolve().parents[1]
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


def test_the_conclusion_reports_no_significant_difference(sweep):
    printed = (sweep / "snakemake.stderr").read_text()
    assert "  significantly faster than the baseline (Holm-adjusted p < 0.05 over 3 comparisons): none" in printed
    assert "  significantly slower: none" in printed
    assert "  no demonstrated difference (or no test possible): same-a, same-b, same-c" in printed
    assert "  sessions: 2 per configuration, the replicates of every interval and test" in printed
    assert "BestName" not in (sweep / "results" / "paper" / "macros.tex").read_text()


def test_summary_shows_sessions_and_between_session_variation(sweep):
    summary = pd.read_csv(sweep / "results" / "summary.csv").set_index("configuration")
    assert list(summary.index) == ["baseline", "same-a", "same-b", "same-c"]  # one row per configuration
    assert (summary["sessions"] == 2).all() and (summary["runs"] == 14).all()
    assert (summary["interval_unit"] == "session").all() and (summary["ci_df"] == 4).all()
    assert (
        summary["decode_tok_s_between_session_cv"].notna().all()
        and (summary["decode_tok_s_between_session_cv"] > 0).all()
    )
    assert (summary["decode_tok_s_ci95_low"] > 0).all()
    assert not summary["significant"].fillna(False).astype(bool).any()
    assert (summary.loc["same-a":, "comparisons"] == 3).all()
    runs = pd.read_csv(sweep / "results" / "runs.csv")
    assert sorted(runs["session"].unique()) == sorted([f"{n}{s}" for n in summary.index for s in ("", "-s2")])
