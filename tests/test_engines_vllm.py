"""vLLM adapter: example config argv, --speculative-config checks, per-request and Prometheus counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from specsweep.engines import openai
from specsweep.engines.base import EngineResources, GenerationRequest, scan_prometheus
from specsweep.engines.vllm import VLLM
from specsweep.plan.config import ConfigError, Configuration
from specsweep.plan.launchplan import plan

REPO = Path(__file__).resolve().parents[1]

# Exposed counter samples as vllm 0.10.2 vllm/v1/metrics/loggers.py declares them (prometheus_client adds
# _total; labels model_name and engine), before and after one run.
BEFORE = """# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100.0
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 300.0
# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 200.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 90.0
"""
AFTER = BEFORE.replace("} 100.0", "} 125.0").replace("} 300.0", "} 375.0").replace("} 200.0", "} 238.0")


@pytest.fixture(scope="module")
def example(example_campaign):
    return example_campaign("vllm-eagle3.yaml")


def test_example_argv(example):
    config, configurations = example
    planned = plan(configurations["eagle3-k3"], config["engines"]["vllm"], config["models"])
    argv = planned["argv"]
    assert argv[:7] == ["vllm", "serve", "/shared/Llama-3.1-8B-Instruct", "--host", "127.0.0.1", "--port", "8000"]
    spec = argv[argv.index("--speculative-config") + 1]
    assert spec == ('{"method": "eagle3", "model": "/shared/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}')
    assert planned["env_set"]["VLLM_SERVER_DEV_MODE"] == "1" and planned["warnings"] == []


def test_speculative_config_must_be_json():
    bad = Configuration(
        name="c",
        engine="e",
        kind="vllm",
        baseline=False,
        args={"--speculative-config": "{method: eagle3}"},
        env={"VLLM_SERVER_DEV_MODE": "1"},
    )
    with pytest.raises(ConfigError, match="--speculative-config: not valid JSON"):
        VLLM.check_configuration(bad)
    no_flush = Configuration(name="c", engine="e", kind="vllm", baseline=True, args={}, env={})
    assert "VLLM_SERVER_DEV_MODE=1" in VLLM.check_configuration(no_flush)[0]


def test_counter_deltas_give_the_counts():
    before = scan_prometheus(BEFORE, VLLM.counters)[0]
    after = scan_prometheus(AFTER, VLLM.counters)[0]
    delta = {k: after[k] - before.get(k, 0.0) for k in after}
    engine = VLLM({"kind": "vllm"}, EngineResources(model="/m"))
    counts = engine.speculation({"usage": {"completion_tokens": 64}}, delta, 64)
    assert (counts.verify_steps, counts.drafted, counts.accepted) == (25, 75, 38)
    assert counts.accept_length == pytest.approx(1 + 38 / 25) and counts.source == "/metrics"


def test_per_request_metrics_win_over_counters():
    # vLLM 0.33 RequestSpecDecodeMetrics.to_dict (vllm/v1/metrics/stats.py), final chunk's metrics.speculative_decoding
    final = {
        "choices": [],
        "usage": {"completion_tokens": 64, "prompt_tokens": 9},
        "metrics": {
            "speculative_decoding": {
                "mean_acceptance_length": 2.52,
                "draft_acceptance_rate": 0.506,
                "acceptance_histogram": [5, 4, 7, 9],
                "num_spec_steps": 25,
                "num_accepted_draft_tokens": 38,
                "num_draft_tokens": 75,
                "num_spec_tokens": 3,
            }
        },
    }
    events = [
        {"choices": [{"index": 0, "text": "Hi", "finish_reason": None}]},
        {"choices": [{"index": 0, "text": "", "finish_reason": "length"}]},
        final,
    ]
    engine = VLLM({"kind": "vllm"}, EngineResources(model="/m"))
    fields = engine.engine_fields(events)
    assert engine.tokens_generated(fields) == 64 and fields["finish_reason"] == "length"
    counts = engine.speculation(fields, {}, 64)
    assert (counts.verify_steps, counts.drafted, counts.accepted) == (25, 75, 38)
    assert "metrics.speculative_decoding" in counts.source
    assert [engine.event_tokens(e) for e in events] == [1, 0, 0]


def test_completion_request():
    path, body = openai.completion_request("served", GenerationRequest("p", 32, 0.0, True, 7))
    assert path == "/v1/completions"
    assert (
        body["model"] == "served" and body["ignore_eos"] is True and body["stream_options"] == {"include_usage": True}
    )
