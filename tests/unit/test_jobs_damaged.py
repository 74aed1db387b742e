"""A damaged record file never blocks the workflow for ever (issue 35): whichever job reads it first (with
load levels, ``load_tables`` reads the runs before ``summary`` does) sets it aside as ``<name>.damaged`` and
fails saying so, so that the same command measures its configuration again. Every job that reads records
does so through the one place that sets them aside (``jobs.sets_aside_damaged``)."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import REPO

from specsweep import jobs
from specsweep.plan import config as sweep_config
from specsweep.record.atomic import DamagedFile

# what reads a record file of the results tree
READERS = {"load_runs", "load_windows", "load_launches", "read_run", "read_launch", "read_window", "read_json"}
# jobs that read only another sweep's records (compare) or an archive's copies, never this tree's
ELSEWHERE = {"compare_results", "pack_archive", "verify_archive", "rebuild_archive", "check_rebuild"}


class Output(dict):
    def keys(self):  # a Namedlist's names
        return list(super().keys())


def smk(tmp_path: Path, runs: list[str], windows: list[str] = ()) -> SimpleNamespace:
    config = sweep_config.validate_schema(sweep_config.load(REPO / "config" / "config.yaml"))
    return SimpleNamespace(
        config=config,
        params=SimpleNamespace(configurations={}, slo={}),
        input=SimpleNamespace(runs=runs, windows=list(windows), run_records=runs),
        output=Output(requests=str(tmp_path / "requests.csv"), categories=str(tmp_path / "categories.csv")),
        log=[str(tmp_path / "logs" / "job.log")],
    )


def good_run(path: Path, index: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"run": index, "prompt_index": 0, "tokens": 500, "text_sha256": "t", "client": {}}
    path.write_text(json.dumps(record))


def test_load_tables_sets_a_damaged_run_file_aside(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good_run(tmp_path / "results" / "a" / "runs" / "run_0.json")
    damaged = tmp_path / "results" / "a" / "runs" / "run_1.json"
    damaged.write_text('{"run": 1, "tok')  # cut short
    with pytest.raises(RuntimeError) as failed:
        jobs.load_tables(smk(tmp_path, ["results/a/runs/run_0.json", "results/a/runs/run_1.json"]))
    message = str(failed.value)
    assert message.startswith("results/a/runs/run_1.json: damaged (not a run record: ")
    assert "set aside as results/a/runs/run_1.json.damaged: rerun the same command" in message
    assert not damaged.exists() and damaged.with_name("run_1.json.damaged").exists()


def test_load_tables_sets_a_damaged_window_file_aside(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good_run(tmp_path / "results" / "a" / "runs" / "run_0.json")
    window = tmp_path / "results" / "a" / "load" / "c2" / "window_0.json"
    window.parent.mkdir(parents=True)
    window.write_text("\0\0\0")  # a crash mid-write on some filesystems
    with pytest.raises(RuntimeError, match=r"window_0.json: damaged \(not a window record: .*set aside as "):
        jobs.load_tables(smk(tmp_path, ["results/a/runs/run_0.json"], ["results/a/load/c2/window_0.json"]))
    assert not window.exists() and window.with_name("window_0.json.damaged").exists()


def test_every_job_that_reads_records_sets_damaged_ones_aside():
    tree = ast.parse(inspect.getsource(jobs))
    unguarded = []
    for job in tree.body:
        if not isinstance(job, ast.FunctionDef) or job.name.startswith("_") or job.name in ELSEWHERE:
            continue
        called = {
            getattr(node.func, "attr", getattr(node.func, "id", None))
            for node in ast.walk(job)
            if isinstance(node, ast.Call)
        }
        decorators = {getattr(d, "id", None) for d in job.decorator_list}
        if called & READERS and "sets_aside_damaged" not in decorators:
            unguarded.append(job.name)
    assert unguarded == []
    assert {"summarise", "load_tables", "plot", "write_effects", "sweep_provenance"} <= {
        name for name, f in vars(jobs).items() if getattr(f, "sets_aside_damaged", False)
    }


def test_two_jobs_that_read_the_same_damaged_file_both_say_where_it_went(tmp_path, monkeypatch):
    # summary and load tables run side by side with --cores 2: the second finds it set aside already
    monkeypatch.chdir(tmp_path)
    damaged = tmp_path / "results" / "a" / "runs" / "run_0.json"
    damaged.parent.mkdir(parents=True)
    damaged.write_text("{")

    def reader(smk: None) -> None:  # both jobs read it before either set it aside
        raise DamagedFile(Path("results/a/runs/run_0.json"), "not a run record")

    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"set aside as results/a/runs/run_0.json.damaged: rerun"):
            jobs.sets_aside_damaged(reader)(None)


def test_bench_serve_sets_a_damaged_window_file_aside_and_writes_its_log(tmp_path, monkeypatch):
    """Its script called the library directly: no log was ever written and a damaged window blocked it."""
    monkeypatch.chdir(tmp_path)
    window = tmp_path / "results" / "a" / "load" / "c2" / "window_0.json"
    window.parent.mkdir(parents=True)
    window.write_text("{")
    job = smk(tmp_path, [], ["results/a/load/c2/window_0.json"])
    job.params.meta = {}
    job.output = [str(tmp_path / "bench_serve.json"), str(tmp_path / "bench_serve")]
    with pytest.raises(RuntimeError, match=r"window_0.json: damaged .*set aside as "):
        jobs.bench_serve(job)
    assert window.with_name("window_0.json.damaged").exists() and Path(job.log[0]).exists()


def test_every_script_is_one_jobs_call():
    """scripts/ are the rules' one-line entry points: the job body (logs, damaged files) lives in jobs.py."""
    for script in sorted((REPO / "scripts").glob("*.py")):
        code = [n for n in ast.parse(script.read_text()).body if not isinstance(n, ast.Expr | ast.ImportFrom)]
        calls = [n for n in ast.parse(script.read_text()).body if isinstance(n, ast.Expr)][1:]
        imported = [n for n in ast.parse(script.read_text()).body if isinstance(n, ast.ImportFrom)]
        assert code == [] and [i.module for i in imported] == ["specsweep.jobs"], script.name
        assert len(calls) == 1 and ast.unparse(calls[0]).endswith("(snakemake)"), script.name
