"""benchmark.confirm_sessions through Snakemake, on the stand-in engine: once summary.csv (and load.csv, with load
levels) chose, the winners and their baseline are measured in fresh sessions (after the summary, never before),
whose speedups alone confirmation.csv and the conclusion publish, a row per choice; summary.csv keeps the choosing
sessions; a rerun has nothing left to do, and the archive packs the confirmation."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import nothing_to_redo_then_packed, snakemake, write_config

# a baseline and a configuration with three times faster tokens: a winner whatever else the machine does
CONFIGURATIONS = {
    "baseline": {"baseline": True, "env": {"STANDIN_MODE": "token-delay=0.006"}},
    "fast": {"env": {"STANDIN_MODE": "token-delay=0.002"}},
}


def test_the_choice_is_confirmed_in_fresh_sessions_after_the_summary(tmp_path, standin, model_file):
    write_config(
        tmp_path,
        standin,
        model_file,
        CONFIGURATIONS,
        sessions=2,
        confirm_sessions=2,
        runs=2,
        telemetry_hz=0,  # the machine's other work would make every session contended, and no winner chosen
    )
    done = snakemake(tmp_path, "all")
    assert done.returncode == 0, done.stderr[-4000:]
    results = tmp_path / "results"
    summary = pd.read_csv(results / "summary.csv")
    assert list(summary["configuration"]) == ["baseline", "fast"] and (summary["sessions"] == 2).all()
    assert [c["configuration"] for c in json.loads((results / "confirmation.json").read_text())] == ["fast"]
    fresh = ["fast-c1", "baseline-c1", "fast-c2", "baseline-c2"]
    chose = (results / "summary.csv").stat().st_mtime
    for name in fresh:  # measured after the choice: no part in it
        assert (results / name / "launch.json").stat().st_mtime > chose
        assert not (results / name.replace("-c", "-x")).exists()
    confirmed = pd.read_csv(results / "confirmation.csv").iloc[0]
    assert confirmed["configuration"] == "fast" and confirmed["baseline"] == "baseline" and confirmed["sessions"] == 2
    assert confirmed["speedup_ci95_low"] < confirmed["speedup"] < confirmed["speedup_ci95_high"]
    assert confirmed["speedup"] > 1  # three times faster tokens: whatever else the machine does
    # best where the choosing sessions declared it, else the leading candidate: the same configuration here
    line = next(line for line in done.stderr.splitlines() if "confirmed in 2 fresh sessions: fast (" in line)
    assert f"{confirmed['speedup']:.2f}x over baseline" in line

    members = nothing_to_redo_then_packed(tmp_path)  # resumable; the archive packs what was measured
    for name in fresh:
        assert any(m.endswith(f"results/{name}/launch.json") for m in members)
        assert any(m.endswith(f"results/{name}/runs/run_1.json") for m in members)
    assert any(m.endswith("results/confirmation.csv") for m in members)


def test_each_load_levels_winner_is_confirmed_in_the_fresh_sessions_windows(tmp_path, standin, model_file):
    """With benchmark.load the checkpoint reads load.csv too: the level's winner is confirmed beside the
    single-request choice, in the same fresh sessions (each configuration once), which measure the level."""
    write_config(
        tmp_path,
        standin,
        model_file,
        CONFIGURATIONS,
        sessions=2,
        confirm_sessions=1,  # one fresh session each: the interval pools the choosing sessions' spread
        runs=1,
        telemetry_hz=0,
        load={"concurrency": [1], "requests_per_window": 4, "windows": 1, "slo": {}},
    )
    done = snakemake(tmp_path, "all")
    assert done.returncode == 0, done.stderr[-4000:]
    results = tmp_path / "results"
    load = pd.read_csv(results / "load.csv").set_index("configuration")
    chosen = json.loads((results / "confirmation.json").read_text())
    assert [(c["load"], c["configuration"]) for c in chosen] == [("single", "fast"), ("c1", "fast")]
    for name in ("fast-c1", "baseline-c1"):  # a whole session: the load level's window too, each session once
        assert (results / name / "load" / "c1" / "window_0.json").exists()
    assert not (results / "fast-c2").exists() and not (results / "baseline-c2").exists()
    confirmed = pd.read_csv(results / "confirmation.csv").set_index("load")
    assert list(confirmed.index) == ["single", "c1"]
    at_c1 = confirmed.loc["c1"]
    assert (at_c1["configuration"], at_c1["baseline"], at_c1["sessions"]) == ("fast", "baseline", 1)
    assert at_c1["declared"] == (load.loc["fast", "level_verdict"] == "best")
    assert at_c1["chosen_speedup"] == pytest.approx(load.loc["fast", "speedup"])
    # one fresh session each: the interval's spread is the choosing sessions', paired at c1 (pairs - 1 df)
    assert at_c1["ci_df"] == min(load["sessions"]) - 1 == 1
    assert at_c1["speedup_ci95_low"] < at_c1["speedup"] < at_c1["speedup_ci95_high"] and at_c1["speedup"] > 1
    line = next(line for line in done.stderr.splitlines() if "confirmed in 1 fresh sessions at c1: fast (" in line)
    assert f"{at_c1['speedup']:.2f}x over baseline (95 % CI" in line

    members = nothing_to_redo_then_packed(tmp_path)
    for name in ("fast-c1", "baseline-c1"):
        assert any(m.endswith(f"results/{name}/load/c1/window_0.json") for m in members)
    assert any(m.endswith("results/confirmation.csv") for m in members)
