"""A summary.csv that rests on a missing run file, or is provisional, is made older than its inputs."""

import io
import os
import re

import pytest
from conftest import REPO
from workflow_runs import snakemake

from specsweep.analyse.outdated import check_load_tables, check_results, check_summary, executes, why_outdated


def test_a_missing_run_file_or_a_provisional_row_makes_the_summary_outdated(tmp_path):
    summary, run = tmp_path / "summary.csv", tmp_path / "run_0.json"
    summary.write_text("configuration,status\na,ok\n")
    run.write_text("{}")
    assert why_outdated(summary, [run]) is None
    run.unlink()
    progress = io.StringIO()
    check_summary(summary, [run], progress)
    assert summary.stat().st_mtime == 0 and summary.read_text() == "configuration,status\na,ok\n"
    assert f"{summary} will be remade: a run file it rests on is missing ({run})" in progress.getvalue()
    summary.write_text("configuration,status\na,ok\nb,stale\n")
    assert why_outdated(summary, []) == "it is the provisional summary of a sweep that did not finish"
    assert why_outdated(tmp_path / "absent.csv", [run]) is None


def test_a_complete_summary_with_an_excluded_row_holds(tmp_path):
    summary = tmp_path / "summary.csv"
    summary.write_text("configuration,status\na,ok\nb,excluded\n")
    assert why_outdated(summary, []) is None


def test_a_deleted_adaptive_extra_run_makes_the_summary_outdated(tmp_path):
    runs = tmp_path / "results" / "a" / "runs"
    (runs / "extra").mkdir(parents=True)
    for path in (runs / "run_0.json", runs / "extra" / "run_1.json", runs / "extra" / "run_2.json"):
        path.write_text("{}")
    summary = tmp_path / "summary.csv"
    summary.write_text("configuration,status,runs,runs_excluded\na,ok,2,1\n")
    assert why_outdated(summary, [runs / "run_0.json"]) is None
    (runs / "extra" / "run_2.json").unlink()
    assert why_outdated(summary, [runs / "run_0.json"]) == "it counts 3 runs of a, but 2 run files are on disk"


@pytest.mark.parametrize(
    ("argv", "runs_jobs"),
    [
        (["--cores", "1", "all"], True),
        (["-c1", "-p", "--configfile", "my.yaml"], True),
        (["-j", "4", "-R", "summary"], True),
        (["--report", "results/report.html", "--report-after-run", "--cores", "1"], True),
        (["--report", "results/report.html"], False),
        (["--report=results/report.html"], False),
        (["-n"], False),
        (["-np", "--configfile", "my.yaml"], False),
        (["--dry-run"], False),
        (["--cores", "1", "--touch"], False),
        (["--unlock"], False),
        (["--list-rules"], False),
    ],
)
def test_only_a_snakemake_that_runs_jobs_marks_anything(argv, runs_jobs):
    assert executes(argv) is runs_jobs


def sweep_folder(tmp_path):
    """A working directory with a sweep file and the results of another sweep (configurations a and b)."""
    text = re.sub(
        r"^  prompts: (\S+)",
        lambda m: f"  prompts: {REPO / m[1]}",
        (REPO / "config/config.yaml").read_text(),
        count=1,
        flags=re.M,
    )
    (tmp_path / "my-sweep.yaml").write_text(text)
    summary = tmp_path / "results" / "summary.csv"
    summary.parent.mkdir()
    summary.write_text("configuration,status,runs\na,ok,3\nb,ok,3\n")
    os.utime(summary, (1_700_000_000, 1_700_000_000))
    return summary


def test_a_report_or_dry_run_never_touches_results_and_a_report_of_another_sweep_is_refused(tmp_path):
    """`snakemake --report` without the sweep's --configfile built the default sweep's report of these results,
    and set summary.csv's mtime to 1970, so the next `all` re-aggregated."""
    summary = sweep_folder(tmp_path)
    report = snakemake(tmp_path, "--report", "results/report.html", configfile=tmp_path / "my-sweep.yaml", cores=None)
    assert report.returncode == 1
    assert (
        "results/summary.csv holds the sweep of a, b, but my-sweep.yaml defines other configurations" in report.stderr
    )
    assert "snakemake --report results/report.html --configfile <that file>" in report.stderr
    assert not (tmp_path / "results" / "report.html").exists()
    dry = snakemake(tmp_path, "-n", configfile=tmp_path / "my-sweep.yaml", cores=None)
    assert dry.returncode == 0, dry.stderr[-2000:]
    # another sweep's summary is not judged by this config's run files (nor dated back); a run remakes it all
    # the same, after measuring this config's configurations
    assert "results/summary.csv would be remade" not in dry.stderr
    assert re.search(r"^summary\s+1$", dry.stdout, re.M) and re.search(r"^bench\s+\d+$", dry.stdout, re.M), dry.stdout
    assert summary.stat().st_mtime == 1_700_000_000


def test_a_deleted_window_file_makes_the_load_tables_outdated(tmp_path):
    tables = [tmp_path / "load.csv", tmp_path / "requests.csv"]
    windows = [tmp_path / "window_0.json", tmp_path / "window_1.json"]
    for path in tables + windows:
        path.write_text("x\n")
    progress = io.StringIO()
    check_load_tables(tables, windows, progress)
    assert all(t.stat().st_mtime > 0 for t in tables) and progress.getvalue() == ""
    windows[1].unlink()
    check_load_tables([*tables, tmp_path / "absent.csv"], windows, progress)
    assert all(t.stat().st_mtime == 0 and t.read_text() == "x\n" for t in tables)
    assert f"{tables[0]} will be remade: a window file it rests on is missing ({windows[1]})" in progress.getvalue()


def test_another_sweeps_results_are_not_marked(tmp_path):
    # `compare` run as the README shows it (no --configfile) reads the default config: the run files of its
    # configurations are missing from a sweep measured with --configfile, whose summary and load tables must
    # not be dated back (its next `all` would recompute them)
    summary, table = tmp_path / "summary.csv", tmp_path / "requests.csv"
    summary.write_text("configuration,status\nmine,ok\n")
    table.write_text("configuration\nmine\n")
    missing_run, missing_window = tmp_path / "default" / "runs" / "run_0.json", tmp_path / "window_0.json"
    progress = io.StringIO()
    check_results(summary, [missing_run], [table], [missing_window], ["default"], progress)
    assert summary.stat().st_mtime > 0 and table.stat().st_mtime > 0 and progress.getvalue() == ""
    check_results(summary, [missing_run], [table], [missing_window], ["mine"], progress)  # its own: marked
    assert summary.stat().st_mtime == 0 and table.stat().st_mtime == 0
