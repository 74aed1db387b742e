"""The Snakefile's handlers (onstart, onsuccess, onerror), called as common.smk calls them, without a workflow."""

from __future__ import annotations

import calendar
import io
import os
import re
import time
from pathlib import Path

import pytest

from specsweep import hooks
from specsweep.record import results
from specsweep.record.configuration import Configuration


def configuration(name: str, env: dict[str, str] | None = None) -> Configuration:
    return Configuration(name=name, engine="e", kind="llamacpp", baseline=False, args={}, env=env or {}, group=name)


CONFIGURATIONS = {"base": configuration("base"), "ngram": configuration("ngram", {"HF_TOKEN": "hf_s3cretvalue42"})}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working folder the rules write under (results/ relative to it)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_measuring_jobs_previous_session_is_kept_redacted_and_its_old_log_renamed(folder, monkeypatch):
    from specsweep.record import history

    kept = {}
    monkeypatch.setattr(history, "keep_previous_session", lambda name, progress, redact: kept.update({name: redact}))
    monkeypatch.setenv("MY_KEY", "declared-secret-value")
    log = folder / "logs" / "bench" / "ngram.log"
    log.parent.mkdir(parents=True)
    log.write_text("the previous attempt\n")
    past = calendar.timegm((2026, 1, 2, 3, 4, 5))
    os.utime(log, (past, past))
    config = {"engines": {"e": {"api_key_env": "MY_KEY"}}}
    hooks.keep_previous_sessions([("ngram", [str(log)])], CONFIGURATIONS, config, io.StringIO())
    assert list(kept) == ["ngram"]
    redacted = kept["ngram"](b"token hf_s3cretvalue42 and key declared-secret-value")
    assert b"hf_s3cretvalue42" not in redacted and b"declared-secret-value" not in redacted
    assert not log.exists()
    assert [p.name for p in log.parent.iterdir()] == ["ngram.20260102T030405Z.log"]


def test_the_wall_time_is_said_only_when_something_is_measured_and_never_stops_the_run(folder, monkeypatch):
    from specsweep.plan import walltime

    quiet = io.StringIO()
    hooks.print_walltime([], CONFIGURATIONS, CONFIGURATIONS, {}, quiet)
    assert quiet.getvalue() == ""

    def broken(*_args, **_kwargs):
        raise RuntimeError("no records")

    monkeypatch.setattr(walltime, "report", broken)
    out = io.StringIO()
    hooks.print_walltime(["ngram"], CONFIGURATIONS, CONFIGURATIONS, {}, out)
    assert out.getvalue() == "specsweep: no wall-time estimate (RuntimeError('no records'))\n"


def test_the_conclusion_comes_only_from_a_summary_this_run_made_with_the_load_lines_before_the_files(
    folder, monkeypatch
):
    from specsweep.analyse import conclusion, loadbest

    monkeypatch.setattr(conclusion, "read", lambda path: path)
    monkeypatch.setattr(conclusion, "lines", lambda rows, root, files: [f"best: from {rows}", "files: results/"])
    monkeypatch.setattr(loadbest, "conclusion_lines", lambda path: [f"per load level: {path}"])
    out = io.StringIO()
    hooks.print_conclusion(True, False, [], out)  # no summary.csv (--touch, --dry-run)
    Path(results.SUMMARY).parent.mkdir(parents=True)
    Path(results.SUMMARY).write_text("configuration\n")
    hooks.print_conclusion(False, False, [], out)  # a summary of an earlier run
    assert out.getvalue() == ""
    Path(results.LOAD_TABLE).write_text("configuration\n")
    hooks.print_conclusion(True, False, [], out)
    assert out.getvalue().splitlines() == [
        f"best: from {results.SUMMARY}",
        f"per load level: {results.LOAD_TABLE}",
        "files: results/",
    ]


def test_a_failed_run_says_what_finished_which_node_was_lost_and_which_job_failed_on_its_node(folder, monkeypatch):
    from specsweep.analyse import incomplete
    from specsweep.measure import claim

    def unreadable(*_args, **_kwargs):
        raise ValueError("damaged run file")

    monkeypatch.setattr(incomplete, "write_summary", unreadable)
    monkeypatch.setattr(claim, "orphaned", lambda path: "node n1 failed" if path.name == "ngram" else None)
    logs = folder / ".snakemake" / "slurm_logs"
    (logs / "rule_bench").mkdir(parents=True)
    (logs / "rule_bench" / "13.log").write_text("specsweep cannot be imported by /usr/bin/python3 on n2\n")
    out = io.StringIO()
    hooks.summarise_what_finished(
        CONFIGURATIONS,
        {"benchmark": {"runs": 3}},
        time.time() - 60,
        ["snakemake", "--profile", "profiles/slurm", "all"],
        str(logs),
        "specsweep cannot be imported by",
        out,
    )
    lines = out.getvalue().splitlines()
    assert lines[0] == "specsweep: no partial summary (ValueError('damaged run file'))"
    assert re.fullmatch(
        r"specsweep: ngram: node n1 failed; its session may still run there\. .* measures ngram again on a "
        r"working node: rerun the same command \(snakemake --profile profiles/slurm all\)",
        lines[1],
    )
    assert lines[2:] == ["specsweep: a job failed on its node: specsweep cannot be imported by /usr/bin/python3 on n2"]
