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
