"""The expected wall time of a sweep (plan/walltime.py): the arithmetic on fake records and assumptions, the
order of its sources, and the estimate of a recorded sweep against how long that sweep took."""

from __future__ import annotations

import datetime as dt
import math
import re
import tarfile
from pathlib import Path

import pytest
import yaml

from specsweep.plan import config as sweep_config
from specsweep.plan import design, walltime
from specsweep.plan.config import Configuration
from specsweep.plan.launchplan import commands_script
from specsweep.record import results
from specsweep.record.atomic import write_json
from specsweep.record.results import ClientTimings, Launch, Run, Window, WindowRequest

REPO = Path(__file__).resolve().parents[3]
RECORDED = REPO / "docs" / "examples" / "h200-load"
T0 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
BENCHMARK = {
    "runs": 4,
    "max_tokens": 100,
    "warmup_requests": 2,
    "warmup_max_tokens": 10,
    "load": {"concurrency": [4], "request_rate": [2.0], "requests_per_window": 16, "windows": 3, "warmup": True},
}


def stamp(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def configuration(name: str, kind: str = "llamacpp", session_of: str | None = None) -> Configuration:
    return Configuration(name=name, engine="e", kind=kind, baseline=False, args={}, env={}, session_of=session_of)


def run(index: int, started_s: float, ttft_s: float, rate: float, tokens: int = 100) -> Run:
    decode_s = tokens / rate
    client = ClientTimings(ttft_s, decode_s, ttft_s + decode_s, rate, 0.01, 0.01, tokens)
    return Run(index, 0, tokens, client, {}, None, "t", started_at=stamp(started_s))


def window(label: str, index: int, started_s: float, duration_s: float, tokens: int, warmup: bool = False) -> Window:
    request = WindowRequest(0, 0.0, 0, "c", tokens, duration_s, [], [], "t")
    level = {"kind": "concurrency", "value": 4, "label": label}
    return Window(level, -1 if warmup else index, stamp(started_s), duration_s, [request], warmup=warmup)


def write_session(root: Path, name: str, kind: str = "llamacpp") -> None:
    """A session of ``name``: launched at 0, ready at 10 s, runs from 12 s (TTFT 0.1 s, 50 tok/s over 100
    tokens), a c4 warmup window of 30 s and two windows of 20 and 24 s over 800 tokens each, stopped at 106 s."""
    runs = [run(i, 12 + 2.1 * i, 0.1, 50.0) for i in range(2)]
    windows = [
        window("c4", 0, 16.2, 30, 800, warmup=True),
        window("c4", 0, 46.2, 20, 800),
        window("c4", 1, 66.2, 24, 800),
    ]
    for r in runs:
        write_json(Path(results.run_file(name, r.run, root)), r.to_json())
    for w in windows:
        write_json(Path(results.window_file(name, "c4", results.WARMUP if w.warmup else w.window, root)), w.to_json())
    launch = Launch(
        {"name": name, "kind": kind},
        [],
        0,
        "h",
        {},
        {},
        stamp(0),
        status="completed",
        ready_s=10.0,
        stopped_at=stamp(92.2),
    )
    write_json(Path(results.launch_file(name, root)), launch.to_json())


def test_a_session_is_read_from_its_records(tmp_path):
    write_session(tmp_path, "x")
    measured = walltime.measured_session("x", tmp_path)
    assert measured.kind == "llamacpp" and measured.ready_s == 10.0
    assert measured.warmup_s == pytest.approx(2.0)  # ready at 10 s, first run at 12 s
    assert measured.ttft_s == pytest.approx(0.1) and measured.decode_tokens_per_s == pytest.approx(50.0)
    assert measured.teardown_s == pytest.approx(2.0)  # last window ended at 90.2 s, stopped at 92.2 s
    assert measured.window_s_per_token == {"c4": pytest.approx(22 / 800)}
    assert measured.warmup_window_s_per_token == {"c4": pytest.approx(30 / 800)}
    assert walltime.measured_session("absent", tmp_path) is None


def test_measured_timings_are_rescaled_to_the_planned_settings(tmp_path):
    write_session(tmp_path, "x")
    benchmark = {**BENCHMARK, "load": {**BENCHMARK["load"], "request_rate": []}}  # 16 requests x 100 tokens
    (found,) = walltime.estimate({"x": configuration("x")}, benchmark, walltime.measured_sessions(tmp_path))
    seconds = {p.name: p.seconds for p in found.phases}
    assert seconds == {
        "launch until ready": 10.0,
        "2 warmup request(s)": pytest.approx(2.0),
        "4 runs": pytest.approx(4 * (0.1 + 100 / 50)),  # runs x (TTFT + max_tokens / decode rate)
        "c4 warmup window": pytest.approx(30 / 800 * 1600),  # twice the tokens it was measured with
        "c4 windows (3)": pytest.approx(3 * 22 / 800 * 1600),
        "teardown": pytest.approx(2.0),
    }
    assert all(p.source == "measured: x" for p in found.phases)
    assert found.seconds == pytest.approx(sum(seconds.values()))


def test_assumed_arithmetic_where_nothing_was_measured():
    (found,) = walltime.estimate({"y": configuration("y")}, BENCHMARK, {})
    assumed = walltime.ASSUMED["llamacpp"]
    request_s = assumed.ttft_s + 100 / assumed.decode_tokens_per_s
    window_c4 = 16 * request_s / 4**walltime.LOAD_SCALING  # 16 requests / C x one request's time at C
    window_r2 = 16 / 2.0 + request_s  # the Poisson schedule, then its last request
    assert [(p.name, p.seconds) for p in found.phases] == [
        ("launch until ready", assumed.ready_s),
        ("2 warmup request(s)", pytest.approx(2 * (assumed.ttft_s + 10 / assumed.decode_tokens_per_s))),
        ("4 runs", pytest.approx(4 * request_s)),
        ("c4 warmup window", pytest.approx(window_c4)),
        ("c4 windows (3)", pytest.approx(3 * window_c4)),
        ("r2 warmup window", pytest.approx(window_r2)),
        ("r2 windows (3)", pytest.approx(3 * window_r2)),
        ("teardown", assumed.teardown_s),
    ]
    assert all(p.source.startswith("assumed") for p in found.phases)
    no_warmup = {**BENCHMARK, "load": {**BENCHMARK["load"], "warmup": False}}
    (without,) = walltime.estimate({"y": configuration("y")}, no_warmup, {})
    assert without.column(walltime.WARMUP_WINDOWS) == 0
    assert without.seconds == pytest.approx(found.seconds - window_c4 - window_r2)


def test_sources_in_order_same_session_other_sessions_kind_median_assumption(tmp_path):
    write_session(tmp_path, "x")
    write_session(tmp_path, "z")
    configurations = {
        "x": configuration("x"),
        "x-s2": configuration("x-s2", session_of="x"),  # benchmark.sessions: 2
        "new": configuration("new"),
        "v": configuration("v", kind="vllm"),
    }
    estimates = {
        e.session: e for e in walltime.estimate(configurations, BENCHMARK, walltime.measured_sessions(tmp_path))
    }
    launch = {name: e.phases[0] for name, e in estimates.items()}
    assert launch["x"].source == "measured: x"
    assert launch["x-s2"].source == "measured: other sessions of x"
    assert launch["new"].source == "measured: median of 2 llamacpp session(s)" and launch["new"].seconds == 10.0
    assert launch["v"].source == "assumed (vllm)" and launch["v"].seconds == walltime.ASSUMED["vllm"].ready_s
    # r2 was measured nowhere: its windows are assumed even where c4's were measured
    r2 = next(p for p in estimates["x"].phases if p.name == "r2 windows (3)")
    assert r2.source.startswith("assumed") and not r2.measured


def test_table_and_details_say_what_is_measured_and_what_assumed(tmp_path):
    write_session(tmp_path, "x")
    table, details = walltime.report(
        {"x": configuration("x"), "v": configuration("v", kind="vllm")}, BENCHMARK, tmp_path
    )
    rows = {line.split()[0]: line for line in table[2:-1]}
    assert rows["x"].endswith(
        "measured: launch, warmup, runs, load warmup, load windows, teardown; assumed: load warmup, load windows"
    )
    assert rows["v"].endswith(" assumed")
    total = sum(
        e.seconds
        for e in walltime.estimate(
            {"x": configuration("x"), "v": configuration("v", kind="vllm")},
            BENCHMARK,
            walltime.measured_sessions(tmp_path),
        )
    )
    assert table[-1] == f"all 2 session(s): {total / 60:.1f} min ({total:.0f} s, {total / 3600:.2f} h) of measuring"
    phases = [line for line in details if line.startswith("  ")]
    assert phases and all(re.search(r" s  (measured|assumed)", line) for line in phases)
    assert details[-1].startswith("assumed (vllm): vLLM 0.25 on an H200")
    script = commands_script([], [*table, "", *details])
    assert f"# {table[-1]}" in script.splitlines() and "#\n#   " not in script


def bench_jobs(log: Path) -> dict[str, float]:
    """Seconds from start to finish of every bench job that finished in a Snakemake console log."""
    when, started, names, took = None, {}, {}, {}
    job = None
    for line in log.read_text().splitlines():
        if m := re.fullmatch(r"\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]", line):
            when = dt.datetime.strptime(m[1], "%a %b %d %H:%M:%S %Y")
        elif line == "localrule bench:":
            job = when
        elif job is not None and (m := re.fullmatch(r"\s+jobid: (\d+)", line)):
            started[m[1]] = job
        elif job is not None and (m := re.fullmatch(r"\s+wildcards: cfg=(\S+)", line)):
            names[max(started, key=lambda j: started[j])] = m[1]
            job = None
        elif m := re.fullmatch(r"Finished jobid: (\d+) \(Rule: bench\)", line):
            took[names[m[1]]] = (when - started[m[1]]).total_seconds()
    return took


def test_the_estimate_of_a_recorded_sweep_is_within_25_percent_of_its_duration(tmp_path):
    """docs/examples/h200-load: 3 llama.cpp sessions on an H200, 7 runs and 27 load windows each. Its bench
    jobs ran in two Snakemake runs (the first stopped during draft-model, which the second measured); their
    start and finish in the console logs are the actual duration, its own records the estimate's measurements."""
    with tarfile.open(RECORDED / "specsweep-652305e60720.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    unpacked = tmp_path / "specsweep-652305e60720"
    config = sweep_config.validate_schema(yaml.safe_load((unpacked / "config" / "config.yaml").read_text()))
    # The code that measured it had no warmup windows yet (benchmark.load.warmup, default true since): the
    # archive holds none, and the logs list none.
    assert not list(unpacked.glob("results/*/load/*/window_warmup.json"))
    config["benchmark"]["load"]["warmup"] = False
    configurations = design.configurations_of(config)
    estimates = walltime.estimate(configurations, config["benchmark"], walltime.measured_sessions(unpacked / "results"))
    assert all(p.measured for e in estimates for p in e.phases)
    actual = bench_jobs(RECORDED / "snakemake-all-first-try.log") | bench_jobs(RECORDED / "snakemake-all.log")
    assert sorted(actual) == sorted(configurations)
    for e in estimates:
        assert e.seconds == pytest.approx(actual[e.session], rel=0.25), e.session
    total = sum(e.seconds for e in estimates)
    assert total == pytest.approx(sum(actual.values()), rel=0.25)
    assert math.isclose(sum(actual.values()), 257 + 269 + 457)  # 00:41:47-00:46:04, -00:50:33, 00:51:03-00:58:40


def test_a_run_recorded_without_its_times_is_left_out_of_them(tmp_path):
    write_session(tmp_path, "x")
    older = run(1, 0, math.nan, math.nan)  # a record of an older specsweep: no TTFT, rate or start
    write_json(Path(results.run_file("x", 1, tmp_path)), {**older.to_json(), "started_at": ""})
    measured = walltime.measured_session("x", tmp_path)
    assert measured.warmup_s == pytest.approx(2.0) and measured.ttft_s == pytest.approx(0.1)
    assert measured.decode_tokens_per_s == pytest.approx(50.0)
