"""results/bench_serve/<configuration>/<level>.json: the load levels as `vllm bench serve --save-result` files
(keys, order, nesting and definitions of vllm/benchmarks/serve.py at 009e6d4a, tests/fixtures/
vllm_save_result_009e6d4a.source), their requests as JSONL, and bench_serve.json listing them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from specsweep.record.arrivals import encode_arrivals
from specsweep.record.results import Window, WindowRequest
from specsweep.report.benchserve import level_result, save_result, sweep_results

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "vllm_save_result_009e6d4a.json"
# vLLM's keys specsweep cannot have: client-side queueing (its clients send when the level says, never queue)
NOT_OURS = {"queue_times"}


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
        [window([request(0, [0.010, 0.020, 0.030], 0.032), request(1, [0.020, 0.025, 0.030], 0.031)], 0.05, delta)],
        kind="vllm",
    )
    assert (result["completed"], result["failed"], result["total_output_tokens"]) == (2, 0, 6)
    assert result["output_throughput"] == pytest.approx(6 / 0.05) and result["request_throughput"] == pytest.approx(40)
    assert result["median_ttft_ms"] == pytest.approx(15.0) and result["p99_ttft_ms"] == pytest.approx(19.9)
    # vLLM's TPOT: (E2E - TTFT) / (tokens - 1), so 11 and 5.5 ms
    assert result["mean_tpot_ms"] == pytest.approx(8.25) and result["std_tpot_ms"] == pytest.approx(2.75)
    assert result["mean_itl_ms"] == pytest.approx(7.5) and result["median_e2el_ms"] == pytest.approx(31.5)
    assert result["spec_decode_acceptance_rate"] == pytest.approx(50.0)
    assert result["spec_decode_acceptance_length"] == pytest.approx(2.5)
    assert result["spec_decode_per_position_acceptance_rates"] == pytest.approx([0.8, 0.5, 0.2])
    assert result["request_goodput"] is None  # no SLOs: null, as vLLM writes it without --goodput


def test_a_file_has_exactly_the_keys_order_and_nesting_of_vllms():
    delta = {"vllm:spec_decode_num_drafts_total": 4.0, "vllm:spec_decode_num_draft_tokens_total": 12.0}
    delta["vllm:spec_decode_num_accepted_tokens_total"] = 6.0
    level = window([request(0, [0.010, 0.020, 0.030], 0.032)], 0.05, delta)
    written = save_result([level], "eagle", {"backend": "openai", "model_id": "m", "kind": "vllm"}, {"ttft_ms": 200})
    vllm = json.loads(FIXTURE.read_text())  # json keeps the file's key order
    assert [k for k in vllm if k not in NOT_OURS] == list(written)
    for key, value in vllm.items():
        if key not in NOT_OURS:  # same nesting: a list where vLLM has a list, a scalar where it has one
            assert isinstance(written[key], list) == isinstance(value, list), key
    assert written["label"] == "eagle" and written["max_concurrency"] == 2 and written["request_rate"] == "inf"


def test_goodput_input_tokens_and_peaks_as_vllm_computes_them():
    # TTFT 10 and 30 ms against a 20 ms objective; the one-token request's TPOT counts 0, as in vLLM
    fast = replace(request(0, [0.010, 0.020], 0.020), prompt_tokens=5)
    slow = replace(request(1, [0.030], 0.030), prompt_tokens=7)
    result = level_result([window([fast, slow], 0.5)], slo={"ttft_ms": 20, "tpot_ms": 50})
    assert result["request_goodput"] == pytest.approx(1 / 0.5)
    assert result["total_input_tokens"] == 12 and result["total_token_throughput"] == pytest.approx((12 + 3) / 0.5)
    assert result["max_output_tokens_per_s"] == 3.0 and result["max_concurrent_requests"] == 2
    assert level_result([window([fast, request(1, [0.03], 0.03)], 0.5)])["total_input_tokens"] is None


def test_speculation_fields_for_llamacpp_counters_and_per_request_counts():
    llamacpp = {
        "llamacpp:spec_decode_num_drafts_total": 5.0,
        "llamacpp:spec_decode_num_draft_tokens_total": 20.0,
        "llamacpp:spec_decode_num_accepted_tokens_total": 10.0,
    }
    found = level_result([window([request(0, [0.01, 0.02], 0.02)], 0.05, llamacpp)], kind="llamacpp")
    assert found["spec_decode_acceptance_rate"] == pytest.approx(50.0)
    assert found["spec_decode_acceptance_length"] == pytest.approx(3.0) and found["spec_decode_num_drafts"] == 5
    # SGLang: only each request's own counts (meta_info), whose number of drafts is unknown
    own = [replace(request(i, [0.01, 0.02], 0.02), drafted=8, accepted=6) for i in range(2)]
    found = level_result([window(own, 0.05)], kind="sglang")
    assert found["spec_decode_acceptance_rate"] == pytest.approx(75.0) and found["spec_decode_draft_tokens"] == 16
    assert found["spec_decode_num_drafts"] is None and found["spec_decode_acceptance_length"] is None


def test_each_engine_reads_its_own_window_counters():
    """A counter named like vLLM's on an SGLang server is not read as vLLM's: the adapter reads its own (as
    load.csv does), and SGLang's say nothing for overlapping requests: the requests' own counts stand."""
    vllm = {"vllm:spec_decode_num_drafts_total": 4.0, "vllm:spec_decode_num_draft_tokens_total": 12.0}
    vllm["vllm:spec_decode_num_accepted_tokens_total"] = 3.0
    own = [replace(request(0, [0.01, 0.02], 0.02), drafted=8, accepted=6)]
    assert level_result([window(own, 0.05, vllm)], kind="vllm")["spec_decode_draft_tokens"] == 12
    assert level_result([window(own, 0.05, vllm)], kind="sglang")["spec_decode_draft_tokens"] == 8


def test_write_makes_one_vllm_file_and_one_request_log_per_configuration_and_level(tmp_path):
    from specsweep.record.atomic import write_json
    from specsweep.report.benchserve import write

    records = tmp_path / "results" / "spec" / "load" / "c2"
    records.mkdir(parents=True)
    path = records / "window_0.json"
    write_json(path, window([request(0, [0.01, 0.02], 0.02), request(1, [0.01], 0.015)], 0.05).to_json())
    out, folder = tmp_path / "bench_serve.json", tmp_path / "bench_serve"
    write([str(path)], ["spec"], str(out), str(folder), {"spec": {"backend": "openai", "model_id": "m"}}, {})
    vllm = json.loads((folder / "spec" / "c2.json").read_text())
    assert vllm["label"] == "spec" and vllm["completed"] == 2 and "configuration" not in vllm
    lines = [json.loads(line) for line in (folder / "spec" / "c2.requests.jsonl").read_text().splitlines()]
    assert [(r["index"], r["output_len"], r["error"]) for r in lines] == [(0, 2, None), (1, 1, None)]
    assert lines[0]["itl"] == pytest.approx([0.01]) and lines[0]["ttft"] == pytest.approx(0.01)
    assert json.loads(out.read_text())["results"][0]["configuration"] == "spec"
    # vLLM's dashboard format: one record per latency metric, every other key in its extra_info
    pytorch = json.loads((folder / "spec" / "c2.pytorch.json").read_text())
    assert [r["metric"]["name"] for r in pytorch][:4] == [
        "median_ttft_ms",
        "mean_ttft_ms",
        "std_ttft_ms",
        "p99_ttft_ms",
    ]
    assert pytorch[0]["metric"]["benchmark_values"] == [vllm["median_ttft_ms"]] and pytorch[0]["model"]["name"] == "m"
    assert (
        pytorch[0]["metric"]["extra_info"]["completed"] == 2 and "mean_itl_ms" not in pytorch[0]["metric"]["extra_info"]
    )
    assert pytorch[0]["benchmark"]["extra_info"]["args"]["max_concurrency"] == 2


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


def test_each_engine_reads_its_own_prompt_count():
    """vLLM/OpenAI usage.prompt_tokens, llama-server's tokens_evaluated, SGLang /generate's meta_info."""
    from specsweep.engines.base import EngineResources
    from specsweep.engines.llamacpp import LlamaCpp
    from specsweep.engines.sglang import SGLang
    from specsweep.engines.vllm import VLLM

    resources = EngineResources(model="/m")
    vllm = VLLM({"kind": "vllm"}, resources)
    assert vllm.prompt_tokens({"usage": {"prompt_tokens": 12, "completion_tokens": 3}}) == 12
    assert vllm.prompt_tokens({"usage": None}) is None and vllm.prompt_tokens({}) is None
    assert LlamaCpp({"kind": "llamacpp"}, resources).prompt_tokens({"tokens_evaluated": 4, "tokens_predicted": 16}) == 4
    assert SGLang({"kind": "sglang"}, resources).prompt_tokens({"meta_info": {"prompt_tokens": 73}}) == 73


def test_burstiness_is_the_one_the_windows_were_sent_with():
    """vLLM's `burstiness`: the open loop's gamma shape as each window recorded it, "inf" for constant gaps
    (vLLM's constant arrivals), 1.0 for a closed loop or a record made before the shape was kept."""
    one = window([request(0, [0.010, 0.020], 0.021)], 0.05)
    rate = {"kind": "request_rate", "value": 2.0, "label": "r2"}
    bursty = replace(one, level=rate, arrivals={"shape": "gamma", "burstiness": 0.5})
    constant = replace(one, level=rate, arrivals={"shape": "constant", "burstiness": "inf"})
    assert save_result([bursty], "b", {}, {})["burstiness"] == 0.5
    assert save_result([constant], "b", {}, {})["burstiness"] == "inf"
    assert save_result([one], "b", {}, {})["burstiness"] == 1.0
    assert Window.from_json(json.loads(json.dumps(bursty.to_json()))).arrivals == bursty.arrivals


def test_a_ramp_level_carries_vllms_ramp_up_keys_after_max_concurrency():
    ramp = {"kind": "ramp_up", "value": 8.0, "label": "ramp1-8exp", "start": 1.0, "strategy": "exponential"}
    level = replace(window([request(0, [0.010, 0.020], 0.021)], 0.05), level=ramp)
    written = save_result([level], "b", {}, {})
    keys = list(written)
    assert keys[keys.index("max_concurrency") + 1 : keys.index("max_concurrency") + 4] == [
        "ramp_up_strategy",
        "ramp_up_start_rps",
        "ramp_up_end_rps",
    ]
    assert (written["ramp_up_strategy"], written["ramp_up_start_rps"], written["ramp_up_end_rps"]) == (
        "exponential",
        1.0,
        8.0,
    )
    assert written["request_rate"] == "inf" and written["max_concurrency"] is None  # as vLLM with a ramp
