"""benchmark.confirm_sessions through Snakemake, on the stand-in engine: once summary.csv chose, the winner and
its baseline are measured in fresh sessions (after the summary, never before), whose speedup alone
confirmation.csv and the conclusion publish; summary.csv keeps the choosing sessions; a rerun has nothing left to
do, and the archive packs the confirmation."""

from __future__ import annotations

import json

import pandas as pd
from conftest import nothing_to_redo_then_packed, snakemake, write_config


def test_the_choice_is_confirmed_in_fresh_sessions_after_the_summary(tmp_path, standin, model_file):
    write_config(
        tmp_path,
        standin,
        model_file,
        {
            "baseline": {"baseline": True, "env": {"STANDIN_MODE": "token-delay=0.006"}},
            "fast": {"env": {"STANDIN_MODE": "token-delay=0.002"}},
        },
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
    assert json.loads((results / "confirmation.json").read_text())["configuration"] == "fast"
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
