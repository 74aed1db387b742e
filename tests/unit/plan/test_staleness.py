"""Runs measured under other parameters are `stale`, labelled with the parameters they had; damaged files say so."""

import json

from specsweep.analyse.incomplete import configuration_status
from specsweep.plan.config import Configuration
from specsweep.plan.staleness import NOT_MEASUREMENT, measured_under, measurement_identity, stale_reason
from specsweep.record.redact import redact_mapping
from specsweep.record.results import ClientTimings, Launch, Run

BENCHMARK = {"runs": 1, "max_tokens": 16}


def config(**changes) -> Configuration:
    return Configuration(
        **{
            "name": "a",
            "engine": "llama",
            "kind": "llamacpp",
            "baseline": False,
            "args": {"--x": 1},
            "env": {"HF_TOKEN": "hf_secret123"},
            **changes,
        }
    )


def launch(configuration: Configuration, benchmark=BENCHMARK) -> Launch:
    return Launch(
        configuration=redact_mapping(configuration.as_params()),
        argv=[],
        port=1,
        host="127.0.0.1",
        env_set={},
        env={},
        launched_at="2026-11-30T23:00:00.000000Z",
        status="completed",
        benchmark=redact_mapping(benchmark),
    )


def test_only_what_identifies_a_job_makes_runs_stale():
    measured = launch(config())
    assert stale_reason(measured, config(description="new words"), BENCHMARK) is None
    assert stale_reason(measured, config(args={"--x": 2}), BENCHMARK) == "measured under other args"
    assert (
        stale_reason(measured, config(), {**BENCHMARK, "max_tokens": 32}) == "measured under other benchmark/max_tokens"
    )
    assert measured_under(measured).args == {"--x": 1}


def test_slo_timeouts_and_the_listed_levels_do_not_identify_a_load_measurement():
    load = {"concurrency": [1, 4], "requests_per_window": 16, "windows": 3, "slo": {}}
    measured = launch(config(), {**BENCHMARK, "request_timeout_s": 120, "load": load})
    for changed in (
        {"request_timeout_s": 30, "load": load},
        {"load": {**load, "slo": {"ttft_ms": 100}}},
        {"load": {**load, "concurrency": [1]}},
        {"load": {**load, "windows": 2}},
    ):
        assert stale_reason(measured, config(), {**BENCHMARK, **changed}) is None, changed
    now = {**BENCHMARK, "load": {**load, "requests_per_window": 32}}
    assert stale_reason(measured, config(), now) == "measured under other benchmark/load"
    assert measurement_identity({"ready_timeout_s": 1, "load": {"seed": 2, "slo": {}}}) == {"load": {"seed": 2}}


def test_the_provisional_summary_status_of_a_folder(tmp_path):
    folder = tmp_path / "a"
    (folder / "runs").mkdir(parents=True)
    timings = ClientTimings(0.01, 1.0, 1.0, 50.0, 0.01, 0.01, 16)
    run = Run(run=0, prompt_index=0, tokens=16, client=timings, engine={}, speculation=None, text_sha256="t")
    (folder / "runs" / "run_0.json").write_text(json.dumps(run.to_json()))
    (folder / "launch.json").write_text(json.dumps(launch(config()).to_json()))
    status, records, _launch, under = configuration_status(config(args={"--x": 2}), 1, tmp_path, BENCHMARK)
    assert status == "stale" and len(records) == 1 and under.args == {"--x": 1}
    assert configuration_status(config(), 1, tmp_path, BENCHMARK)[0] == "ok"
    (folder / "runs" / "run_0.json").write_text('{"run"')
    status = configuration_status(config(), 1, tmp_path, BENCHMARK)[0]
    assert status.startswith(f"damaged ({folder / 'runs' / 'run_0.json'}: not a run record")  # before: `missing`


def test_check_only_settings_neither_rerun_nor_stale_a_measurement():
    # the bench rule's params are measurement_identity(benchmark): a GPU memory check setting edited re-measured
    # every configuration
    measured = launch(config(), {**BENCHMARK, "gpu_release_tolerance_mib": 64, "gpu_memory_check": "auto"})
    for changed in ({"gpu_release_tolerance_mib": 512}, {"gpu_memory_check": "never"}, {"gpu_release_timeout_s": 5}):
        assert measurement_identity({**BENCHMARK, **changed}) == BENCHMARK, changed
        assert stale_reason(measured, config(), {**BENCHMARK, **changed}) is None, changed


def test_what_compare_ignores_as_no_measurement_reruns_nothing():
    # one list of settings that change no run's number: compare matches on the rest, the bench rule is keyed on it
    from specsweep.report import compare

    counted_by_the_statistics = {"runs", "adaptive", "load/slo"}  # a rerun measures more or other runs
    assert compare.NOT_MEASUREMENT - counted_by_the_statistics <= NOT_MEASUREMENT
