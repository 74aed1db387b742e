"""The search through the workflow, on the stand-in engine: a sweep of one speculative flag writes the next
values and the next round's fragment, the conclusion says them, and the fragment passed with --configfile
measures the new values alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support import BENCHMARK, executable_standin, kill_all, leftovers, standin_config, standin_model
from workflow_runs import snakemake

from specsweep.analyse import search

pytestmark = pytest.mark.workflow

FLAG = "--draft-max"  # the stand-in ignores it: the search follows whatever rates it measures


def test_the_next_round_measures_the_proposed_values_alone(tmp_path: Path):
    exe = executable_standin(tmp_path / "bin")
    config = standin_config(
        exe,
        standin_model(tmp_path / "model.gguf"),
        {
            "baseline": {"baseline": True},
            "draft": {"grid": {"args": {FLAG: [2, 6]}, "name": "draft{" + FLAG + "}"}},
        },
        # a load level beside single requests (the stand-in has one slot): each level's search follows its own
        # rates; one session each, as the search reads rates, not verdicts (a short test: CI's time)
        {
            **BENCHMARK,
            "runs": 2,
            "sessions": 1,
            "load": {"concurrency": [1], "requests_per_window": 4, "windows": 1},
        },
    )
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    try:
        first = snakemake(tmp_path, timeout=600)
        assert first.returncode == 0, first.stderr[-3000:]
        found = json.loads((tmp_path / "results" / "next_values.json").read_text())
        assert found["flag"] == FLAG and found["next_values"]
        assert set(found["levels"]) == {search.SINGLE_REQUEST, "c1"}
        assert "next values worth measuring" in first.stderr
        next_round = tmp_path / "results" / "next_round.yaml"
        launches = {path: path.read_text() for path in (tmp_path / "results").glob("*/launch.json")}
        second = snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml"), str(next_round), timeout=600)
        assert second.returncode == 0, second.stderr[-3000:]
    finally:
        kill_all(leftovers(exe))
    measured = {path.parent.name for path in (tmp_path / "results").glob("*/launch.json")}
    assert {f"draft{value}" for value in found["next_values"]} <= measured
    # the first round's sessions are the same records: not measured again
    assert {path: path.read_text() for path in launches} == launches
    again = json.loads((tmp_path / "results" / "next_values.json").read_text())
    assert set(map(int, again["levels"][search.SINGLE_REQUEST]["measured"])) >= {0, 2, 6, *found["next_values"]}
    assert again["next_values"] or search.CONFIRM in again["why"]
