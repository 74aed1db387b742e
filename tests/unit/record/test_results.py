"""The results tree: paths, and the run and launch records' JSON form and loader."""

from __future__ import annotations

import json

import pytest

from specsweep.record import results
from specsweep.record.results import ClientTimings, Launch, Run
from specsweep.record.speculation import SpeculationCounts

RUN = Run(
    run=2,
    prompt_index=1,
    tokens=64,
    started_at="2026-01-01T00:00:00.000000Z",
    streamed_tokens=64,
    client=ClientTimings(
        ttft_s=0.1,
        decode_s=1.0,
        e2e_s=1.2,
        decode_tokens_per_s=63.0,
        itl_median_s=0.015,
        itl_p90_s=0.02,
        content_events=40,
    ),
    engine={"timings": {"predicted_per_second": 64.5}},
    counter_delta={"c": 1.0},
    speculation=SpeculationCounts(drafted=40, accepted=30, emitted=64, verify_steps=10, source="response"),
    text_sha256="ab",
    text_chars=300,
    malformed_events=0,
)


def test_a_run_record_round_trips_and_writes_the_derived_ratios_beside_the_counts():
    data = json.loads(json.dumps(RUN.to_json()))
    assert Run.from_json(data) == RUN
    assert data["speculation"]["acceptance_rate"] == 0.75 and data["speculation"]["accept_length"] == 4.0
    assert data["client"]["decode_tokens_per_s"] == RUN.decode_tokens_per_s == 63.0
    assert RUN.engine_tokens_per_s == 64.5


def test_a_launch_record_leaves_out_what_is_not_known_yet():
    launch = Launch(
        configuration={"name": "a"}, argv=["x"], port=1, host="127.0.0.1", env_set={}, env={}, launched_at="t"
    )
    assert "stopped_at" not in launch.to_json() and launch.to_json()["status"] == "launching"
    launch.status, launch.stopped_at, launch.engine = "completed", "u", {"version": "b1"}
    again = Launch.from_json(json.loads(json.dumps(launch.to_json())))
    assert again == launch and again.completed and again.engine_version == "b1"


def test_paths_name_the_rule_patterns_and_the_files():
    assert results.run_file("{cfg}", 0) == "results/{cfg}/runs/run_0.json"
    assert results.launch_file("a", "/tmp/r") == "/tmp/r/a/launch.json"
    assert results.configuration_of("results/a/runs/extra/run_7.json") == "a"
    assert results.configuration_of(results.run_file("b", 3)) == "b"
    assert results.RUN_PATH.search("x/" + results.run_file("b", 3)).groups() == ("b", "3")
    assert results.RUN_PATH.search(str(results.extra_run_file(results.runs_dir("b"), 7))).groups() == ("b", "7")
    assert results.LAUNCH_PATH.search(results.launch_file("b"))[1] == "b"
    assert results.sequential_round("{r}") == "results/sequential_round_{r}.json"


def test_the_loader_reads_declared_runs_then_adaptive_extras_in_order(tmp_path):
    declared = [results.run_file("a", i, tmp_path) for i in range(2)]
    for i, path in enumerate(
        [*declared, *(results.extra_run_file(results.runs_dir("a", tmp_path), i) for i in (10, 2))]
    ):
        results.extra_runs_dir(results.runs_dir("a", tmp_path)).mkdir(parents=True, exist_ok=True)
        with open(path, "w") as handle:
            json.dump({**RUN.to_json(), "run": i}, handle)
    loaded = results.load_runs(declared)
    assert [r.run for r in loaded["a"]] == [0, 1, 3, 2]  # run_2 before run_10: numeric order


def test_a_broken_run_file_is_named_with_the_fix(tmp_path):
    path = tmp_path / "run_0.json"
    path.write_text('{"run": 0}')
    with pytest.raises(ValueError, match=r"run_0\.json: damaged \(not a run record.*rerun"):
        results.read_run(path)
