"""The SLO rate search on the stand-in engine of a known capacity (capacity=R: one completion at a time, 1/R s
each): the session finds R within one search step, and records every probe."""

from __future__ import annotations

import json

from conftest import leftovers, run_session, session_spec

CAPACITY = 20.0  # requests/s: 50 ms per completion
SEARCH = {"low": 4.0, "high": 36.0, "steps": 3}  # step (36 - 4) / 2**3 = 4 requests/s
# constant arrivals: below the capacity nothing queues, above it the queue grows by (1/R - 1/rate) a request
LOAD = {"requests_per_window": 12, "seed": 1, "arrivals": "constant", "warmup": False, "slo": {"ttft_p90_ms": 100}}


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
    assert abs(record["found_rate"] - CAPACITY) <= record["resolution"], record["probes"]
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
