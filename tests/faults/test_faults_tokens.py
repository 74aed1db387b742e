"""The tokens a request produced (record/tokens.py) on a stand-in that streams several tokens per event, and on
one whose final count disagrees with what it streamed (issue 36 item 1, issue 35 item 6)."""

from __future__ import annotations

import json

from conftest import results_of, run_session, session_spec

from specsweep.record.results import read_window

LOAD = {"concurrency": [1], "requests_per_window": 4, "windows": 1, "warmup": False, "seed": 1, "slo": {}}


def measured(tmp_path, standin, model_file, monkeypatch, mode: str) -> tuple[list[dict], list]:
    """One session of 2 runs and one c1 window of 4 requests (16 tokens each) under ``mode``."""
    spec = session_spec(tmp_path, standin, model_file, env={"STANDIN_MODE": mode}, runs=2, load=LOAD)
    spec["windows"] = {"c1": 1}
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    runs = [json.loads((results_of(spec) / "runs" / f"run_{i}.json").read_text()) for i in range(2)]
    return runs, read_window(results_of(spec) / "load" / "c1" / "window_0.json").requests


def test_several_tokens_per_event_count_every_token(tmp_path, standin, model_file, monkeypatch):
    runs, requests = measured(tmp_path, standin, model_file, monkeypatch, "tokens-per-event=4,token-delay=0.01")
    assert [(r["tokens"], r["streamed_tokens"], r["excluded"]) for r in runs] == [(16, 16, None)] * 2
    assert {(r.tokens, tuple(r.event_tokens), r.flagged) for r in requests} == {(16, (1, 4, 4, 4, 3), None)}


def test_a_final_count_the_stream_does_not_carry_is_flagged_and_not_counted(tmp_path, standin, model_file, monkeypatch):
    runs, requests = measured(tmp_path, standin, model_file, monkeypatch, "overclaim=4")
    reason = "the engine reports 16 tokens but its stream carried 4"
    assert [(r["tokens"], r["streamed_tokens"], r["excluded"]) for r in runs] == [(16, 4, reason)] * 2
    assert [r.flagged for r in requests] == [reason] * 4


def test_counters_that_fall_are_refused_naming_the_run_even_for_a_baseline(tmp_path, standin, model_file, monkeypatch):
    """Speculation counters falling by 222 drafts a run gave 'drafted -222' as an ok count (issue 35 item 6)."""
    spec = session_spec(tmp_path, standin, model_file, env={"STANDIN_MODE": "falling-counters"}, runs=2)
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    runs = [json.loads((results_of(spec) / "runs" / f"run_{i}.json").read_text()) for i in range(2)]
    assert [r["speculation"] for r in runs] == [None, None]
    assert all(r["counter_delta"]["llamacpp:spec_decode_num_draft_tokens_total"] == -222 for r in runs)  # kept
    assert all("drafted -222" in r["speculation_refused"] and "counter fell" in r["speculation_refused"] for r in runs)
    assert "run 1/2: impossible speculation counts from /metrics: drafted -222" in progress


def test_more_accepted_than_drafted_is_refused(tmp_path, standin, model_file, monkeypatch):
    """draft_n 10, draft_n_accepted 50 gave acceptance_rate 5.0, averaged as ok."""
    spec = session_spec(tmp_path, standin, model_file, env={"STANDIN_MODE": "overaccept"}, runs=1)
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    run = json.loads((results_of(spec) / "runs" / "run_0.json").read_text())
    assert run["speculation"] is None and "accepted 50 > drafted 10" in run["speculation_refused"]
    assert "WARNING: run 1/1: impossible speculation counts" in progress
