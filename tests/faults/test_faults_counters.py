"""Quantised counters (misuse): llama-server prints /metrics values with 6 significant digits, so past 10^6 a
per-run difference is only good to 10 or more (150 verify steps read as 160). Such counters are detected, not
used, and the session says so; the response's own counts are used."""

from __future__ import annotations

import json

from conftest import results_of, run_session, session_spec

from specsweep.engines.base import quantised_counters
from specsweep.engines.openai import LLAMACPP_COUNTERS, VLLM_COUNTERS

# llama.cpp b11434 tools/server/server-context.cpp writes each value with a default std::stringstream
# (precision 6); vLLM's prometheus_client writes repr() of the float.
LLAMACPP_METRICS = """# HELP llamacpp:spec_decode_num_drafts_total Number of speculative decoding drafts.
# TYPE llamacpp:spec_decode_num_drafts_total counter
llamacpp:spec_decode_num_drafts_total 1.23457e+06
llamacpp:spec_decode_num_draft_tokens_total 370370
"""
VLLM_METRICS = 'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 1234567.0\n'


def test_counters_in_scientific_notation_past_a_million_are_quantised():
    assert quantised_counters(LLAMACPP_METRICS, LLAMACPP_COUNTERS) == {"llamacpp:spec_decode_num_drafts_total"}
    assert quantised_counters(VLLM_METRICS, VLLM_COUNTERS) == set()


def test_a_session_does_not_use_quantised_deltas_and_says_so(tmp_path, standin, model_file, monkeypatch):
    spec = session_spec(tmp_path, standin, model_file, env={"STANDIN_MODE": "big-counters"}, runs=2)
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    run = json.loads((results_of(spec) / "runs" / "run_0.json").read_text())
    assert run["counters_quantised"] == sorted(LLAMACPP_COUNTERS)
    assert run["counter_delta"]["llamacpp:spec_decode_num_drafts_total"] in (150.0, 160.0)  # 155 steps, quantised
    assert run["speculation"]["source"] == "response timings" and run["speculation"]["verify_steps"] is None
    assert (run["speculation"]["drafted"], run["speculation"]["accepted"]) == (12, 8)  # at most tokens - 1
    assert progress.count("past 10^6 with 6 significant digits: per-run differences are quantised") == 1
    launch = json.loads((results_of(spec) / "launch.json").read_text())
    assert any("quantised" in w for w in launch["warnings"])
