"""The SLO rate search on the stand-in engine of a known capacity (capacity=R: one completion at a time, 1/R s
each): the session finds the rate the queue allows within one search step, and records every probe."""

from __future__ import annotations

import json

import pandas as pd
from conftest import leftovers, run_session, session_spec, snakemake, write_config

CAPACITY = 20.0  # requests/s: 50 ms per completion
SEARCH = {"low": 4.0, "high": 36.0, "steps": 3}  # step (36 - 4) / 2**3 = 4 requests/s
TTFT_P90_S = 0.100
# constant arrivals: below the capacity nothing queues, above it the queue grows by (1/R - 1/rate) a request
LOAD = {
    "requests_per_window": 12,
    "seed": 1,
    "arrivals": "constant",
    "warmup": False,
    "slo": {"ttft_p90_ms": 1000 * TTFT_P90_S},
}


def slo_rate(capacity: float, search: dict) -> float:
    """The highest rate of the search's grid whose window meets the SLO by the queue alone: request k of a window
    at rate r > R waits k (1/R - 1/r), then its first event (1/16 of 1/R), and the p90 of 12 (linear, as
    numpy) lies at k = 9.9. The answer is above R: a 12-request window ends before its queue reaches 100 ms."""
    first_event_s, k90 = 1 / capacity / 16, 0.9 * (LOAD["requests_per_window"] - 1)
    highest = 1 / (1 / capacity - (TTFT_P90_S - first_event_s) / k90)
    step = (search["high"] - search["low"]) / 2 ** search["steps"]
    return search["low"] + step * ((highest - search["low"]) // step)


def test_the_search_finds_the_stand_ins_capacity_within_one_step(tmp_path, standin, model_file, monkeypatch):
    spec = session_spec(
        tmp_path,
        standin,
        model_file,
        env={"STANDIN_MODE": f"capacity={CAPACITY:g}"},
        runs=1,
        load={**LOAD, "rate_search": SEARCH},
    )
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    record = json.loads((tmp_path / "results" / "cfg" / "load" / "rate_search.json").read_text())
    assert record["resolution"] == 4.0 and len(record["probes"]) == 4
    assert [p["rate"] for p in record["probes"]][:2] == [4.0, 20.0]  # low, then the middle of the range
    # a busy machine's scheduling delays only lengthen the queue: one step below at most, never above
    expected = slo_rate(CAPACITY, SEARCH)
    assert expected - record["resolution"] <= record["found_rate"] <= expected, record["probes"]
    assert not record["at_ceiling"] and record["arrivals"] == {"shape": "constant", "burstiness": "inf"}
    assert {p["verdict"] for p in record["probes"]} >= {"meets"} and not all(
        p["verdict"] == "meets" for p in record["probes"]
    )
    assert all(p["requests"] > 0 and "ttft_p90_ms" in p["measured_ms"] for p in record["probes"][:1])
    assert f"cfg: SLO rate {record['found_rate']:g} requests/s, to 4 requests/s" in progress
    assert "cfg: rate search r4: meets" in progress
    launch = json.loads((tmp_path / "results" / "cfg" / "launch.json").read_text())
    assert launch["status"] == "completed"
    assert [s["level"] for s in launch["log_segments"] if s["phase"] == "warmup" and s.get("level")] == [
        f"r{p['rate']:g}" for p in record["probes"]
    ]  # a probe's engine log rows count in no table
    assert leftovers(standin) == []


def test_a_sweep_writes_each_sessions_search_and_slo_rate_csv(tmp_path, standin, model_file):
    """Two configurations of known capacities (10 and 20 requests/s), two sessions each: slo_rate.csv gives
    each one's rate with its interval over sessions and the ratio to the baseline, the log says it in words."""
    configurations = {
        "baseline": {"baseline": True, "env": {"STANDIN_MODE": "capacity=10"}},
        "faster": {"env": {"STANDIN_MODE": "capacity=20"}},
    }
    search = {"low": 2.0, "high": 34.0, "steps": 4}  # step 2 requests/s
    load = {**LOAD, "rate_search": search}
    write_config(tmp_path, standin, model_file, configurations, runs=1, sessions=2, load=load)
    done = snakemake(tmp_path, "all")
    assert done.returncode == 0, done.stderr[-3000:]
    for session in ("baseline", "baseline-s2", "faster", "faster-s2"):
        assert (tmp_path / "results" / session / "load" / "rate_search.json").exists()
    table = pd.read_csv(tmp_path / "results" / "slo_rate.csv").set_index("configuration")
    assert list(table.index) == ["baseline", "faster"] and (table["sessions"] == 2).all()
    expected = {name: slo_rate(capacity, search) for name, capacity in (("baseline", 10.0), ("faster", 20.0))}
    for name, rate in expected.items():  # 10 and 24 requests/s, or a step below
        assert rate - 2.0 <= table.loc[name, "slo_rate_mean"] <= rate, table
        assert table.loc[name, "slo_rate_ci95_low"] <= table.loc[name, "slo_rate_mean"]
    ratio = expected["faster"] / expected["baseline"]
    assert (expected["faster"] - 2.0) / expected["baseline"] <= table.loc["faster", "vs_baseline"] <= ratio / 0.8
    log = (tmp_path / "logs" / "load_tables.log").read_text()
    assert "faster raises the SLO rate from" in log
    assert not (tmp_path / "results" / "load.csv").exists()  # no levels: only the search
    archived = snakemake(tmp_path, "archive")  # slo_rate.csv rebuilt from the archived searches, byte for byte
    assert archived.returncode == 0, archived.stderr[-3000:]
    assert leftovers(standin) == []
