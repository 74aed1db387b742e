"""Load windows when the engine misbehaves (stand-in engine): nothing measured is lost, errors say why."""

from __future__ import annotations

import json
import re

import pytest
from conftest import failed_dirs, leftovers, run_session, session_spec, snakemake, write_config

from specsweep.engines.server import ServerError
from specsweep.measure.session import RunError
from specsweep.plan.load_levels import Arrivals

LOAD = {"requests_per_window": 2, "windows": 2, "seed": 1, "slo": {}}


def test_engine_killed_in_the_second_window_keeps_the_runs_and_the_first_window(
    tmp_path, standin, model_file, monkeypatch
):
    # Completions: warmup 1, runs 2-3, window 1: 4-5, window 2: 6-7; the engine dies half-way through 6.
    spec = session_spec(
        tmp_path, standin, model_file, env={"STANDIN_MODE": "die-during=6"}, runs=2, load={**LOAD, "concurrency": [1]}
    )
    spec["windows"] = {"c1": 2}
    error, progress = run_session(spec, monkeypatch)
    assert isinstance(error, ServerError)
    assert "the server died during load c1 window 2/2" in str(error)
    (kept,) = failed_dirs(spec)
    assert sorted(p.name for p in (kept / "runs").iterdir()) == ["run_0.json", "run_1.json"]
    assert sorted(p.name for p in (kept / "load" / "c1").iterdir()) == ["window_0.json"]
    window = json.loads((kept / "load" / "c1" / "window_0.json").read_text())
    assert [r["tokens"] for r in window["requests"]] == [16, 16]
    assert "c1 window 1/2" in progress
    assert leftovers(standin) == []


def test_fewer_slots_than_the_concurrency_fail_before_the_first_window(tmp_path, standin, model_file, monkeypatch):
    # The stand-in reports total_slots 1 in /props (as llama-server with -np unset may choose for itself).
    spec = session_spec(tmp_path, standin, model_file, runs=1, load={**LOAD, "concurrency": [2]})
    spec["windows"] = {"c2": 2}
    error, _ = run_session(spec, monkeypatch)
    assert isinstance(error, RunError)
    assert "the server has 1 slot(s) (/props total_slots) but benchmark.load.concurrency asks for 2" in str(error)
    (kept,) = failed_dirs(spec)
    assert (kept / "runs" / "run_0.json").exists() and not (kept / "load").exists()
    assert leftovers(standin) == []


def test_an_open_loop_window_is_sent_and_recorded_with_its_burstiness(tmp_path, standin, model_file, monkeypatch):
    """benchmark.load.burstiness: the window's sends follow the seeded gamma schedule of that shape, and its
    record says which shape it was sent with (bench_serve's vLLM burstiness comes from there)."""
    from specsweep.plan.load_levels import arrival_times, window_seed

    load = {**LOAD, "request_rate": [10.0], "requests_per_window": 6, "windows": 1, "burstiness": 4.0}
    spec = session_spec(tmp_path, standin, model_file, runs=1, load=load)
    spec["windows"] = {"r10": 1}
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    record = json.loads((tmp_path / "results" / "cfg" / "load" / "r10" / "window_0.json").read_text())
    assert record["arrivals"] == {"shape": "gamma", "burstiness": 4.0}
    planned = arrival_times(10.0, 6, window_seed(1, 0), Arrivals(burstiness=4.0))
    assert [r["sent_s"] for r in record["requests"]] == pytest.approx(planned, abs=0.05)
    assert planned != arrival_times(10.0, 6, window_seed(1, 0))  # not the Poisson schedule
    assert leftovers(standin) == []


def test_a_ramp_window_is_sent_along_its_ramp_and_is_a_row_of_the_load_table(
    tmp_path, standin, model_file, monkeypatch
):
    """benchmark.load.ramp_up: one more open-loop level whose rate rises within the window (vLLM's
    --ramp-up-strategy); its record keeps the ramp, load.csv has its row, the figures leave it out."""
    from specsweep.analyse.loadsummary import load_table
    from specsweep.plan.config import Configuration
    from specsweep.plan.load_levels import RAMP_UP, LoadLevel, schedule, window_seed
    from specsweep.record.results import load_windows
    from specsweep.report import loadfigures

    ramp = {"strategy": "linear", "start": 5.0, "end": 40.0}
    load = {**LOAD, "requests_per_window": 8, "windows": 1, "arrivals": "constant", "ramp_up": ramp}
    spec = session_spec(tmp_path, standin, model_file, runs=1, load=load)
    spec["windows"] = {"ramp5-40": 1}
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    path = tmp_path / "results" / "cfg" / "load" / "ramp5-40" / "window_0.json"
    record = json.loads(path.read_text())
    assert record["level"] == {
        "kind": "ramp_up",
        "value": 40.0,
        "label": "ramp5-40",
        "start": 5.0,
        "strategy": "linear",
    }
    planned = schedule(LoadLevel(RAMP_UP, 40.0, 5.0, "linear"), 8, window_seed(1, 0), Arrivals("constant"))
    assert [r["sent_s"] for r in record["requests"]] == pytest.approx(planned, abs=0.03)
    assert record["arrivals"] == {"shape": "constant", "burstiness": "inf"}
    base = Configuration(name="cfg", engine="e", kind="llamacpp", baseline=True, args={}, env={}, group="cfg")
    table = load_table({"cfg": base}, load_windows([path]), {})
    assert list(table["load"]) == ["ramp5-40"] and list(table["load_kind"]) == ["ramp_up"]
    for figure in (loadfigures.load_speedup, loadfigures.load_latency):  # a ramp is no point on a load axis
        made = figure(table)
        assert made.axes  # made, without it
        made.clf()
    assert leftovers(standin) == []


# Issue #27 item 5: what identifies a load measurement, a deleted window file, a window of no duration.


def test_a_window_of_no_duration_is_named_not_a_zero_division(tmp_path):
    from specsweep.analyse.loadsummary import load_table
    from specsweep.plan.config import Configuration
    from specsweep.record.results import load_windows, window_file

    path = tmp_path / window_file("base", "c1", 0)
    path.parent.mkdir(parents=True)
    record = {"level": {"kind": "concurrency", "value": 1, "label": "c1"}, "window": 0, "requests": []}
    path.write_text(json.dumps({**record, "duration_s": 0}))
    with pytest.raises(
        ValueError, match=r"window_0.json: damaged \(not a window record: ValueError\('duration_s is 0, not a positive"
    ):
        base = Configuration(name="base", engine="e", kind="llamacpp", baseline=True, args={}, env={}, group="base")
        load_table({"base": base}, load_windows([path]), {})


def planned(done) -> dict[str, int]:
    assert done.returncode == 0, done.stderr[-3000:]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", done.stdout, flags=re.M)}


def test_only_what_a_measurement_depends_on_identifies_it_and_a_deleted_window_is_measured_again(
    tmp_path, standin, model_file
):
    load = {"concurrency": [1], "request_rate": [20.0], "requests_per_window": 4, "windows": 2, "slo": {}}
    configurations = {"baseline": {"baseline": True}, "other": {"args": {"--temp": 0}}}

    def configure(**changes):
        write_config(
            tmp_path, standin, model_file, configurations, runs=1, load={**load, **changes.pop("load", {})}, **changes
        )

    configure()
    done = snakemake(tmp_path, "all")
    assert done.returncode == 0, done.stderr[-3000:]
    table = tmp_path / "results" / "load.csv"
    assert (tmp_path / "results/other/load/c1/window_warmup.json").exists()

    # an SLO only changes what the tables make of the windows: they are remade, nothing is measured
    configure(load={"slo": {"ttft_ms": 5000}})
    plan = planned(snakemake(tmp_path, "all", "-n"))
    assert "bench" not in plan and plan.get("load_tables") == 1, plan
    configure(request_timeout_s=33)  # when to give up is not what was measured
    assert "bench" not in planned(snakemake(tmp_path, "all", "-n"))
    configure(load={"request_rate": None})  # one level less: the other levels' windows still hold
    load.pop("request_rate")
    configure()
    assert "bench" not in planned(snakemake(tmp_path, "all", "-n"))
    configure(max_tokens=12)  # what is generated is what was measured
    assert planned(snakemake(tmp_path, "all", "-n")).get("bench") == 2
    configure()

    # a deleted window file: the tables that counted it are remade, and its configuration measured again
    (tmp_path / "results/other/load/c1/window_1.json").unlink()
    check = snakemake(tmp_path, "all", "-n")
    plan = planned(check)
    assert plan.get("bench") == 1 and plan.get("load_tables") == 1, check.stdout[-3000:]
    assert (
        f"{table.relative_to(tmp_path)} would be remade by a run: a window file it rests on is missing" in check.stderr
    )
    assert leftovers(standin) == []
