"""A configuration's previous session is kept in history/ (hard links), once, with what it was measured under."""

import io
import json

from specsweep.record.history import keep_previous_session
from specsweep.record.results import Launch


def session(folder, launched_at="2026-11-30T23:29:04.123456Z"):
    (folder / "runs").mkdir(parents=True)
    (folder / "runs" / "run_0.json").write_text('{"run": 0}\n')
    (folder / "server.log").write_text("log\n")
    launch = Launch(
        configuration={"name": "a"},
        argv=[],
        port=1,
        host="127.0.0.1",
        env_set={},
        env={},
        launched_at=launched_at,
        status="completed",
        benchmark={"runs": 1},
    )
    (folder / "launch.json").write_text(json.dumps(launch.to_json()))


def test_the_previous_session_is_kept_before_it_is_replaced(tmp_path):
    folder = tmp_path / "results" / "a"
    session(folder)
    progress = io.StringIO()
    kept = keep_previous_session("a", progress, tmp_path / "results")
    assert kept == folder / "history" / "20261130T232904.123456Z"
    assert (kept / "runs" / "run_0.json").read_text() == '{"run": 0}\n'
    assert (kept / "runs" / "run_0.json").stat().st_ino == (folder / "runs" / "run_0.json").stat().st_ino  # a link
    assert json.loads((kept / "measured_under.json").read_text()) == {
        "configuration": {"name": "a"},
        "benchmark": {"runs": 1},
    }
    assert "a: the previous session (completed, 3 files) is kept in" in progress.getvalue()
    (folder / "runs" / "run_0.json").unlink()  # what Snakemake does next: the kept copy stays
    assert (kept / "runs" / "run_0.json").exists()
    assert keep_previous_session("a", progress, tmp_path / "results") is None  # the same session is kept once
    assert [p.name for p in (folder / "history").iterdir()] == ["20261130T232904.123456Z"]


def test_nothing_to_keep_and_a_damaged_launch_record(tmp_path):
    assert keep_previous_session("none", io.StringIO(), tmp_path) is None
    folder = tmp_path / "b"
    session(folder)
    (folder / "launch.json").write_text('{"launched_')
    kept = keep_previous_session("b", io.StringIO(), tmp_path)
    assert (kept / "launch.json").read_text() == '{"launched_' and not (kept / "measured_under.json").exists()


def test_load_windows_are_kept_with_the_session(tmp_path):
    folder = tmp_path / "results" / "a"
    session(folder)
    window = folder / "load" / "c4" / "window_0.json"
    window.parent.mkdir(parents=True)
    window.write_text('{"window": 0}\n')
    kept = keep_previous_session("a", io.StringIO(), tmp_path / "results")
    assert (kept / "load" / "c4" / "window_0.json").stat().st_ino == window.stat().st_ino
