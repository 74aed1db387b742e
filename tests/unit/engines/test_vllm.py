"""vLLM adapter: example config argv, --speculative-config checks, per-request and Prometheus counts."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from specsweep.engines import openai
from specsweep.engines.base import EngineResources, GenerationRequest, scan_prometheus
from specsweep.engines.vllm import VLLM, per_position_rates, per_request_warning
from specsweep.plan.config import ConfigError, Configuration
from specsweep.plan.launchplan import plan

REPO = Path(__file__).resolve().parents[3]

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


class FakeResponse:
    def __init__(self, body: object, status: int = 200) -> None:
        self.body, self.status_code = body, status
        self.text = json.dumps(body)

    def json(self) -> object:
        return self.body


class FakeHTTP:
    """Answers by path, as the real server's routes would; records what was posted."""

    def __init__(self, answers: dict[str, FakeResponse]) -> None:
        self.answers, self.posted = answers, []

    def post(self, url: str, json: dict, timeout: float) -> FakeResponse:
        path = "/" + url.split("/", 3)[3]
        self.posted.append((path, json))
        return self.answers[path]

    def get(self, url: str, timeout: float) -> FakeResponse:
        return self.answers["/" + url.split("/", 3)[3]]


# vllm 0.25.0 vllm/entrypoints/serve/tokenize/protocol.py: TokenizeResponse{count, max_model_len, tokens,
# token_strs}; DetokenizeResponse{prompt}. SmolLM2's template (no BOS in it) rendered for one user turn.
RENDERED = "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"
TOKENIZE = {
    "count": 9,
    "max_model_len": 8192,
    "tokens": [1, 4093, 198, 19556, 2, 198, 1, 520, 9531],
    "token_strs": None,
}


def test_chat_template_rendered_by_tokenize_and_detokenize():
    engine = VLLM({"kind": "vllm"}, EngineResources(model="/m"))
    engine.model_name = "/m"
    engine.http = FakeHTTP({"/tokenize": FakeResponse(TOKENIZE), "/detokenize": FakeResponse({"prompt": RENDERED})})
    assert engine.apply_chat_template("http://127.0.0.1:8000", "Hello") == RENDERED
    (tokenize, body), (_, tokens) = engine.http.posted
    assert tokenize == "/tokenize" and body["messages"] == [{"role": "user", "content": "Hello"}]
    assert body["add_generation_prompt"] is True and tokens == {"model": "/m", "tokens": TOKENIZE["tokens"]}
    _, request = engine.generation(GenerationRequest(RENDERED, 8, 0.0, True, 1))
    assert request["add_special_tokens"] is False  # the rendered template carries its own special tokens
    plain = VLLM({"kind": "vllm"}, EngineResources(model="/m"))
    assert "add_special_tokens" not in plain.generation(GenerationRequest("p", 8, 0.0, True, 1))[1]


def test_chat_template_refused_by_the_server_is_named():
    engine = VLLM({"kind": "vllm"}, EngineResources(model="/m"))
    # vLLM answers 400 ErrorResponse when the tokenizer has no chat template
    engine.http = FakeHTTP({"/tokenize": FakeResponse({"error": {"message": "no chat template"}}, 400)})
    with pytest.raises(RuntimeError, match=r"chat_template: vLLM /tokenize answered 400.*--chat-template"):
        engine.apply_chat_template("http://127.0.0.1:8000", "Hello")


def test_stats_interval_is_short_unless_the_configuration_sets_it():
    engine = VLLM({"kind": "vllm"}, EngineResources(model="/m"))
    assert engine.launch_env() == {"VLLM_LOG_STATS_INTERVAL": "1"}


def test_per_position_acceptance_from_counter_deltas():
    engine = VLLM({"kind": "vllm"}, EngineResources(model="/m"))
    two = "\n".join(
        [
            BEFORE.strip(),
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 70.0',
        ]
    )
    after = AFTER.replace('position="0"} 90.0', 'position="0"} 110.0') + (
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 80.0\n'
    )
    engine.http = FakeHTTP({"/metrics": FakeResponse(None)})
    readings = []
    for text in (two, after):
        engine.http.answers["/metrics"].text = text
        readings.append(engine.scrape_counters("http://127.0.0.1:8000"))
    delta = {k: readings[1][k] - readings[0].get(k, 0.0) for k in readings[1]}
    # 25 verify steps; position 0 accepted 20 of them, position 1 accepted 10
    assert per_position_rates(delta) == pytest.approx([20 / 25, 10 / 25])
    assert per_position_rates({"vllm:spec_decode_num_drafts_total": 0.0}) is None


def test_per_request_counts_are_asked_for_where_the_version_has_them():
    spec = Configuration(name="c", engine="e", kind="vllm", baseline=False, args={"--speculative-config": "{}"}, env={})
    assert "--per-request-spec-decode-metrics" in per_request_warning("0.33.0", spec)
    assert per_request_warning("0.25.0", spec) is None  # 0.25.0 has no such flag (its wheel has no per_request_spec)
    asked = replace(spec, args={**spec.args, "--per-request-spec-decode-metrics": "summary"})
    assert per_request_warning("0.33.0", asked) is None


def test_the_plan_shows_the_stats_interval_and_a_configuration_can_set_its_own(example):
    config, configurations = example
    planned = plan(configurations["baseline"], config["engines"]["vllm"], config["models"])
    assert planned["env_set"]["VLLM_LOG_STATS_INTERVAL"] == "1"  # results/commands.sh launches what a session does
    own = replace(configurations["baseline"], env={**configurations["baseline"].env, "VLLM_LOG_STATS_INTERVAL": "5"})
    assert plan(own, config["engines"]["vllm"], config["models"])["env_set"]["VLLM_LOG_STATS_INTERVAL"] == "5"


def _local_vllm(answers: dict[str, tuple[int, str]]):
    """A local endpoint answering each path as engines/vllm.py's notes say vLLM does (POST /reset_prefix_cache:
    200, or 200 with {"success": false} when the cache could not be reset, no route without
    VLLM_SERVER_DEV_MODE=1; GET /metrics: Prometheus text); every other path 404."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def answer(self):
            asked.append(self.path)
            status, body = answers.get(self.path, (404, "{}"))
            self.send_response(status)
            self.end_headers()
            self.wfile.write(body.encode())

        do_GET = do_POST = answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}", asked


@pytest.mark.parametrize(
    ("answer", "flushed"), [((200, "{}"), True), ((200, '{"success": false}'), False), ((404, "Not Found"), False)]
)
def test_the_prefix_cache_is_reset_before_each_run_or_the_error_says_how(answer, flushed):
    server, base_url, posted = _local_vllm({"/reset_prefix_cache": answer})
    try:
        engine = VLLM({"kind": "vllm"}, EngineResources(model="/m"))
        if flushed:
            engine.flush_cache(base_url)
        else:
            with pytest.raises(RuntimeError, match="VLLM_SERVER_DEV_MODE=1 or add --no-enable-prefix-caching"):
                engine.flush_cache(base_url)
        assert posted == ["/reset_prefix_cache"]
        engine.flushable = False  # started with --no-enable-prefix-caching: nothing to reset, no request
        engine.flush_cache(base_url)
        assert posted == ["/reset_prefix_cache"]
        assert engine.request_model() == "/m"  # before /v1/models named it, the path it was served from
    finally:
        server.shutdown()


def test_metrics_give_the_summed_counters_and_each_draft_positions_through_the_shared_scrape():
    server, base_url, _ = _local_vllm({"/metrics": (200, AFTER)})
    try:
        engine = VLLM({"kind": "vllm"}, EngineResources(model="/m"))
        counters = engine.scrape_counters(base_url)
    finally:
        server.shutdown()
    assert counters["vllm:spec_decode_num_drafts_total"] == 125.0
    assert counters["vllm:spec_decode_num_accepted_tokens_total"] == 238.0
    assert counters["vllm:spec_decode_num_accepted_tokens_per_pos_total[0]"] == 90.0
    assert engine.quantised == set()  # full floats, as prometheus_client prints them


FIXTURE = json.loads((REPO / "tests" / "fixtures" / "vllm_speculative_config.json").read_text())


def test_speculative_config_fields_are_those_of_the_released_package():
    """The adapter's list is the fixture read from vllm-0.25.0's wheel (tests/fixtures/extract_vllm_speculative_fields.py)."""
    from specsweep.engines.vllm import SPECULATIVE_CONFIG_FIELDS

    assert FIXTURE["source"].startswith("vllm-0.25.0-") and FIXTURE["source"].endswith(
        "vllm/config/speculative.py SpeculativeConfig"
    )
    assert set(FIXTURE["fields"]) == SPECULATIVE_CONFIG_FIELDS


def _eagle3_with(axis: str, values: list) -> dict:
    from specsweep.plan import config as sweep_config

    config = sweep_config.load(REPO / "config" / "examples" / "vllm-eagle3.yaml")
    config["configurations"]["eagle3"]["grid"] = {"args": {axis: values}}
    return sweep_config.expand(sweep_config.validate_schema(config))


def test_a_misspelt_key_inside_the_speculative_config_axis_is_refused_before_anything_plans():
    """--speculative-config.num_speculative_token: [1, 3, 5] planned silently (vLLM refuses it at launch, on the
    GPU node), its grid points named by position (...-2 held 3)."""
    from specsweep.plan.preflight import check_configurations

    configurations = _eagle3_with("--speculative-config.num_speculative_token", [1, 3, 5])
    with pytest.raises(ConfigError) as error:
        check_configurations(configurations)
    message = str(error.value)
    assert "'num_speculative_token'" in message and "did you mean 'num_speculative_tokens'" in message
    assert "SpeculativeConfig" in message


def test_grid_points_of_a_json_key_are_named_by_value():
    names = [
        n for n in _eagle3_with("--speculative-config.suffix_decoding_min_token_prob", [0.1, 0.2]) if "eagle3" in n
    ]
    assert names == ["eagle3-suffix_decoding_min_token_prob-0.1", "eagle3-suffix_decoding_min_token_prob-0.2"]
