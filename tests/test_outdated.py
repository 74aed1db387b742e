"""A summary.csv that rests on a missing run file, or is provisional, is made older than its inputs."""

import io

from specsweep.analyse.outdated import check_load_tables, check_summary, why_outdated


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
