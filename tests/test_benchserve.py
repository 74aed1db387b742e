"""results/bench_serve.json: the load levels in `vllm bench serve --save-result` field names and definitions."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from specsweep.record.arrivals import encode_arrivals
from specsweep.record.results import Window, WindowRequest
from specsweep.report.benchserve import level_result, sweep_results

FIXTURE = Path(__file__).parent / "fixtures" / "vllm_bench_serve_result.json"
# vLLM's own result fields that specsweep cannot have: it records no input tokens, no dataset or tokenizer
# names (the sweep's config has them), no per-second peaks, no goodput with vLLM's SLO flags
NOT_OURS = {
    "date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "burstiness",
    "total_input_tokens", "total_token_throughput", "request_goodput", "max_output_tokens_per_s",
    "max_concurrent_requests", "rtfx",
}  # fmt: skip


def request(index: int, arrivals_s: list[float], e2e_s: float) -> WindowRequest:
    return WindowRequest(
        index=index,
        sent_s=0.0,
        prompt_index=index,
        category="c",
        tokens=len(arrivals_s),
        e2e_s=e2e_s,
        arrivals_us=encode_arrivals(arrivals_s),
        event_tokens=[1] * len(arrivals_s),
        text_sha256="",
    )


def window(requests: list[WindowRequest], duration_s: float, delta: dict | None = None, w: int = 0) -> Window:
    level = {"kind": "concurrency", "value": 2, "label": "c2"}
    return Window(
        level=level, window=w, started_at="", duration_s=duration_s, requests=requests, counter_delta=delta or {}
    )


def test_fields_and_definitions_are_vllms():
    # two requests of 3 tokens: first tokens at 10 and 20 ms, gaps of 10 and 5 ms, ends at 32 and 31 ms
    delta = {
        "vllm:spec_decode_num_drafts_total": 10.0,
        "vllm:spec_decode_num_draft_tokens_total": 30.0,
        "vllm:spec_decode_num_accepted_tokens_total": 15.0,
        "vllm:spec_decode_num_accepted_tokens_per_pos_total[0]": 8.0,
        "vllm:spec_decode_num_accepted_tokens_per_pos_total[1]": 5.0,
        "vllm:spec_decode_num_accepted_tokens_per_pos_total[2]": 2.0,
    }
    result = level_result(
        [window([request(0, [0.010, 0.020, 0.030], 0.032), request(1, [0.020, 0.025, 0.030], 0.031)], 0.05, delta)]
    )
    assert (result["completed"], result["failed"], result["total_output_tokens"]) == (2, 0, 6)
    assert result["max_concurrency"] == 2 and result["request_rate"] == "inf"
    assert result["output_throughput"] == pytest.approx(6 / 0.05) and result["request_throughput"] == pytest.approx(40)
    assert result["median_ttft_ms"] == pytest.approx(15.0) and result["p99_ttft_ms"] == pytest.approx(19.9)
    # vLLM's TPOT: (E2E - TTFT) / (tokens - 1), so 11 and 5.5 ms
    assert result["mean_tpot_ms"] == pytest.approx(8.25) and result["std_tpot_ms"] == pytest.approx(2.75)
    assert result["mean_itl_ms"] == pytest.approx(7.5) and result["median_e2el_ms"] == pytest.approx(31.5)
    assert result["spec_decode_acceptance_rate"] == pytest.approx(50.0)
    assert result["spec_decode_acceptance_length"] == pytest.approx(2.5)
    assert result["spec_decode_per_position_acceptance_rates"] == pytest.approx([0.8, 0.5, 0.2])
    # every field is one vLLM's --save-result JSON has, under the same name
    vllm_fields = set(json.loads(FIXTURE.read_text()))
    assert set(result) - {"p90_ttft_ms", "p90_tpot_ms", "p90_itl_ms", "p90_e2el_ms"} <= vllm_fields
    assert vllm_fields - NOT_OURS <= set(result)


def test_windows_pool_and_each_level_is_one_entry():
    one = window([request(0, [0.01, 0.02], 0.02)], 0.02, w=0)
    two = window([request(0, [0.01, 0.03], 0.03)], 0.03, w=1)
    found = sweep_results({"b": [two, one]}, ["b"])["results"]
    assert [(r["configuration"], r["load"], r["completed"]) for r in found] == [("b", "c2", 2)]
    assert found[0]["duration"] == pytest.approx(0.05) and found[0]["output_throughput"] == pytest.approx(4 / 0.05)
    assert "spec_decode_acceptance_rate" not in found[0]  # nothing drafted: no spec_decode_* fields


def test_a_request_whose_count_its_stream_does_not_carry_is_failed_not_completed():
    # a llama-server stream listing 1 token per event, 3 events, whose final event claims 16 tokens
    claimed = replace(request(1, [0.010, 0.020, 0.030], 0.032), tokens=16, exact_events=True)
    result = level_result([window([request(0, [0.010, 0.020, 0.030], 0.032), claimed], 0.05)])
    assert (result["completed"], result["failed"], result["total_output_tokens"]) == (1, 1, 3)


def test_output_tokens_are_the_engines_count_when_a_chunk_carries_several():
    # vLLM: 3 chunks counted 1 each carrying the 9 tokens usage.completion_tokens reports
    chunked = replace(request(0, [0.010, 0.020, 0.030], 0.032), tokens=9)
    assert level_result([window([chunked], 0.05)])["total_output_tokens"] == 9
