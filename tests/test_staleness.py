"""Runs measured under other parameters are `stale`, labelled with the parameters they had; damaged files say so."""

import json

from specsweep.config import Configuration
from specsweep.incomplete import configuration_status
from specsweep.redact import redact_mapping
from specsweep.staleness import measured_under, stale_reason

BENCHMARK = {"runs": 1, "max_tokens": 16}


def config(**changes) -> Configuration:
    return Configuration(**{"name": "a", "engine": "llama", "kind": "llamacpp", "baseline": False,
                            "args": {"--x": 1}, "env": {"HF_TOKEN": "hf_secret123"}, **changes})


def launch(configuration: Configuration, benchmark=BENCHMARK) -> dict:
    return {"status": "completed", "configuration": redact_mapping(configuration.as_params()),
            "benchmark": redact_mapping(benchmark)}


def test_only_what_identifies_a_job_makes_runs_stale():
    measured = launch(config())
    assert stale_reason(measured, config(description="new words"), BENCHMARK) is None
    assert stale_reason(measured, config(args={"--x": 2}), BENCHMARK) == "measured under other args"
    assert stale_reason(measured, config(), {**BENCHMARK, "max_tokens": 32}) == \
        "measured under other benchmark/max_tokens"
    assert measured_under(measured).args == {"--x": 1}


def test_the_provisional_summary_status_of_a_folder(tmp_path):
    folder = tmp_path / "a"
    (folder / "runs").mkdir(parents=True)
    (folder / "runs" / "run_0.json").write_text(json.dumps({"run": 0}))
    (folder / "launch.json").write_text(json.dumps(launch(config())))
    status, records, _launch, under = configuration_status(folder, 1, config(args={"--x": 2}), BENCHMARK)
    assert status == "stale" and len(records) == 1 and under.args == {"--x": 1}
    assert configuration_status(folder, 1, config(), BENCHMARK)[0] == "ok"
    (folder / "runs" / "run_0.json").write_text('{"run"')
    status = configuration_status(folder, 1, config(), BENCHMARK)[0]
    assert status.startswith(f"damaged ({folder / 'runs' / 'run_0.json'}: damaged")  # before: `missing`
