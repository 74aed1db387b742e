"""Misuses of the newer features as a new user makes them (load levels, datasets, factors, external engines):
each is answered with the key, what is wrong and the fix, not a generic schema sentence, a silent no-op or a
wait for a timeout."""

from __future__ import annotations

import copy
import io
import socket
import time

import pytest
from support import BENCHMARK

from specsweep.engines import adapter
from specsweep.engines.base import EngineResources
from specsweep.engines.server import ServerError
from specsweep.measure.session import Session, SessionPaths, measure
from specsweep.plan.config import ConfigError, Configuration, expand, validate_schema
from specsweep.plan.workload import Prompt, read_workload

LOAD = {"requests_per_window": 2, "windows": 1}


def _refused(default_config, edit) -> str:
    config = copy.deepcopy(default_config)
    edit(config)
    with pytest.raises(ConfigError) as error:
        expand(validate_schema(config))
    return str(error.value)


def test_load_without_a_level_says_which_keys_make_one(default_config):
    said = _refused(default_config, lambda c: c["benchmark"].update(load=dict(LOAD)))
    assert "'benchmark/load': needs concurrency, request_rate, rate_search or ramp_up (one or more)" in said
    assert "requests_per_window" not in said  # the value is not quoted back instead of the fix


@pytest.mark.parametrize(
    ("model", "said"),
    [
        ({}, "needs either pypi_wheel and sha256, or path, or hub"),
        (None, "give either pypi_wheel and sha256, or path, or hub, not"),
    ],
)
def test_a_model_with_neither_or_both_sources_says_so(default_config, model, said):
    def edit(config):
        entry = config["models"]["smollm2-135m"]
        if model is None:
            entry["path"] = "/models/x.gguf"
        else:
            config["models"]["smollm2-135m"] = model

    assert f"'models/smollm2-135m': {said}" in _refused(default_config, edit)


def test_a_list_given_as_a_flag_value_points_to_the_grid(default_config):
    said = _refused(default_config, lambda c: c["configurations"]["baseline"].update(args={"-t": [1, 2]}))
    assert "[1, 2] is not allowed here; give a string, number, boolean or null, or {from_env: NAME}" in said
    assert "to sweep several values, list them under the entry's grid" in said


FACTORS = {"threads": {"t1": {"-t": 1, "baseline": True}, "t2": {"-t": 2}}}


def test_an_entry_flag_that_every_level_overrides_is_refused(default_config):
    def edit(config):
        config["factors"] = copy.deepcopy(FACTORS)
        config["configurations"] = {"x": {"factors": ["threads"], "args": {"-t": 8}}}

    said = _refused(default_config, edit)
    assert "configurations/x/args/-t: every level of factor 'threads' sets -t, so this value is never used" in said


def test_an_entry_flag_that_some_level_leaves_out_is_that_level_s_value(default_config):
    config = copy.deepcopy(default_config)
    config["factors"] = {"threads": {"t1": {"baseline": True}, "t2": {"-t": 2}}}
    config["configurations"] = {"x": {"factors": ["threads"], "args": {"-t": 8}}}
    expanded = expand(validate_schema(config))
    assert expanded["x-t1"].args["-t"] == 8 and expanded["x-t2"].args["-t"] == 2


def test_two_baseline_levels_of_one_factor_are_refused(default_config):
    def edit(config):
        config["factors"] = {"threads": {"t1": {"-t": 1, "baseline": True}, "t2": {"-t": 2, "baseline": True}}}
        config["configurations"] = {"x": {"factors": ["threads"]}}

    said = _refused(default_config, edit)
    assert "factors/threads: levels t1, t2 are all marked baseline: true" in said and "mark one level" in said


def test_a_dataset_with_a_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"prompt": "a"}\n')
    assert read_workload(path) == [Prompt("a")]
    text = tmp_path / "prompts.txt"
    text.write_bytes(b"\xef\xbb\xbffirst\n")
    assert read_workload(text) == [Prompt("first")]  # not "\ufefffirst"


def test_an_unreachable_external_endpoint_is_said_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSWEEP_CACHE", str(tmp_path / "cache"))  # its own measuring lock
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    settings = {"kind": "external", "host": "127.0.0.1", "port": 0, "external": {"base_url": url}}
    engine = adapter("external", settings, EngineResources())
    configuration = Configuration(name="ext", engine="remote", kind="external", baseline=True, args={}, env={})
    out = tmp_path / "results" / "ext"
    paths = SessionPaths(
        log=out / "server.log",
        launch=out / "launch.json",
        runs=[out / "runs" / "run_0.json"],
        stale_pgid=out / "server.pgid",
        failed_root=out / "failed",
    )
    benchmark = {**BENCHMARK, "runs": 1, "ready_timeout_s": 120}
    started = time.monotonic()
    with pytest.raises(ServerError) as error:
        measure(Session(configuration, engine, benchmark, [Prompt("hi")], "127.0.0.1", 0, paths), io.StringIO())
    assert time.monotonic() - started < 30  # not the 120 s readiness timeout
    assert f"engines/remote/external/base_url: {url}: nothing listens on" in str(error.value)
    assert "start it, or fix the URL" in str(error.value)


def test_a_single_load_level_not_in_a_list_says_how_to_write_it(default_config):
    said = _refused(default_config, lambda c: c["benchmark"].update(load={**LOAD, "concurrency": 2}))
    assert "'benchmark/load/concurrency': 2 is not a list; write [2] (a list of one)" in said
