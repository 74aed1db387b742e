"""SGLang adapter: launch argv/env of the example campaign, domain checks, request format and the
speculation counts of every meta_info layout (tests/fixtures/sglang_meta_info.json cites the sources)."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from specsweep.engines.base import EngineResources, GenerationRequest
from specsweep.engines.sglang import SGLang
from specsweep.plan.config import ConfigError, Configuration
from specsweep.plan.launchplan import plan, shell_line

REPO = Path(__file__).resolve().parents[3]
META = json.loads((REPO / "tests" / "fixtures" / "sglang_meta_info.json").read_text())


@pytest.fixture(scope="module")
def campaign(example_campaign):
    return example_campaign("sglang-eagle3-steps.yaml")


# The campaign as its author ran it by hand (1 draft step, NCCL tuned); the other configurations differ
# only in steps / draft tokens, in the six NCCL variables, and (baselines) in the speculative flags.
ORIGINAL = """NCCL_PROTO=LL NCCL_ALGO=Ring NCCL_P2P_LEVEL=SYS NCCL_MAX_NCHANNELS=16 NCCL_BUFFSIZE=16777216 \
NCCL_NTHREADS=512 EAGLE3_PROFILE=1 SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 \
python3 -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 --trust-remote-code \
  --tp-size 8 --mem-fraction-static 0.88 --host 0.0.0.0 --port 8000 \
  --num-continuous-decode-steps 4 --disable-custom-all-reduce --speculative-algorithm EAGLE3 \
  --speculative-draft-model-path /data/eagle3/output_100k_sglang/4 --speculative-eagle-topk 1 \
  --speculative-num-draft-tokens 2 --speculative-num-steps 1"""
NCCL = ("NCCL_PROTO", "NCCL_ALGO", "NCCL_P2P_LEVEL", "NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE", "NCCL_NTHREADS")
SPECULATIVE = (
    "--speculative-algorithm",
    "--speculative-draft-model-path",
    "--speculative-eagle-topk",
    "--speculative-num-draft-tokens",
    "--speculative-num-steps",
)


def original_launch(steps: int | None, tuned: bool) -> tuple[list[str], dict[str, str | None], dict[str, str]]:
    """(launcher, options as flag -> value or None for a bare flag, environment) of the original command
    for ``steps`` draft steps (None: no speculation) and NCCL tuned or not."""
    words = ORIGINAL.split()
    env = dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-"))
    argv = [w for w in words if "=" not in w or w.startswith("-")]
    launcher, options = argv[:3], {}
    for word, after in zip(argv[3:], [*argv[4:], "--"], strict=True):
        if word.startswith("--"):
            options[word] = None if after.startswith("--") else after
    if steps is None:
        options = {k: v for k, v in options.items() if k not in SPECULATIVE}
    else:
        options.update({"--speculative-num-steps": str(steps), "--speculative-num-draft-tokens": str(steps + 1)})
    if not tuned:
        env = {k: v for k, v in env.items() if k not in NCCL}
    return launcher, options, env


def test_example_campaign_plans_the_original_command_for_each_configuration(campaign):
    """8 launches: 2 baselines + 3 depths x 2 NCCL levels, each the original campaign's argv and environment
    (options compared as flag -> value: SGLang's argparse does not depend on their order)."""
    config, configurations = campaign
    assert len(configurations) == 8
    for depth, steps in (("nospec", None), ("s1", 1), ("s2", 2), ("s5", 5)):
        for level, tuned in (("default", False), ("tuned", True)):
            name = f"{depth}-nccl-{level}"
            planned = plan(
                configurations[name],
                config["engines"]["sglang"],
                config["models"],
                swept=(*NCCL, "EAGLE3_PROFILE", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"),
            )
            launcher, options, env = original_launch(steps, tuned)
            argv = planned["argv"]
            assert argv[:3] == launcher, name
            found = {}
            for word, after in zip(argv[3:], [*argv[4:], "--"], strict=True):
                if word.startswith("--"):
                    found[word] = None if after.startswith("--") else after
            assert found == options, name
            assert planned["env_set"] == env, name
            assert planned["env_unset"] == ([] if tuned else sorted(NCCL)), name
            assert configurations[name].baseline == (steps is None)
            assert SGLang.check_configuration(configurations[name]) == []
    line = shell_line(
        plan(configurations["s1-nccl-default"], config["engines"]["sglang"], config["models"], swept=NCCL)
    )
    assert line.startswith(
        "env -u NCCL_ALGO -u NCCL_BUFFSIZE -u NCCL_MAX_NCHANNELS -u NCCL_NTHREADS "
        "-u NCCL_P2P_LEVEL -u NCCL_PROTO EAGLE3_PROFILE=1 "
    )


def test_example_campaign_compares_each_depth_with_the_baseline_of_its_nccl_level(campaign):
    from specsweep.plan.factors import baselines_by_configuration

    _, configurations = campaign
    compared = baselines_by_configuration(configurations)
    for depth in ("s1", "s2", "s5"):
        for level in ("default", "tuned"):
            assert compared[f"{depth}-nccl-{level}"] == f"nospec-nccl-{level}"
    assert compared["nospec-nccl-tuned"] is None


def configuration(**args) -> Configuration:
    return Configuration(name="c", engine="e", kind="sglang", baseline=False, args=args, env={})


def test_domain_checks():
    assert (
        SGLang.check_configuration(
            configuration(
                **{
                    "--speculative-algorithm": "EAGLE3",
                    "--speculative-draft-model-path": "d",
                    "--speculative-num-steps": 3,
                    "--speculative-eagle-topk": 1,
                    "--speculative-num-draft-tokens": 4,
                }
            )
        )
        == []
    )
    warnings = SGLang.check_configuration(
        configuration(
            **{
                "--speculative-algorithm": "EAGLE3",
                "--speculative-num-steps": 3,
                "--speculative-eagle-topk": 1,
                "--speculative-num-draft-tokens": 3,
            }
        )
    )
    assert any("without --speculative-draft-model-path" in w for w in warnings)
    assert any("expects --speculative-num-draft-tokens = --speculative-num-steps + 1 = 4" in w for w in warnings)
    with pytest.raises(ConfigError, match="more than the draft tree holds"):
        SGLang.check_configuration(
            configuration(
                **{"--speculative-num-steps": 2, "--speculative-eagle-topk": 2, "--speculative-num-draft-tokens": 8}
            )
        )


def test_generate_request_uses_native_sampling_params():
    engine = SGLang({"kind": "sglang"}, EngineResources(model="/m"))
    path, body = engine.generation(GenerationRequest("hi", 64, 0.0, True, 42))
    assert path == "/generate"
    assert body == {
        "text": "hi",
        "sampling_params": {"max_new_tokens": 64, "temperature": 0.0, "ignore_eos": True},
        "stream": True,
    }
    assert "sampling_seed" in engine.generation(GenerationRequest("hi", 64, 0.7, True, 42))[1]["sampling_params"]


@pytest.mark.parametrize(
    ("version", "drafted", "source"),
    [("0.4.3.post2", 60, "spec_verify_ct"), ("0.5.10", 60, "0.5.10 keys"), ("0.5.23", 60, "0.5.23 keys")],
)
def test_speculation_counts_of_every_meta_info_layout(version, drafted, source):
    engine = SGLang({"kind": "sglang"}, EngineResources(model="/m"))
    engine.server_args = {"speculative_num_draft_tokens": 4}  # from /server_info
    meta = {k: v for k, v in META[version].items() if not k.startswith("_")}
    counts = engine.speculation({"meta_info": meta}, {}, emitted=64)
    assert (counts.drafted, counts.accepted, counts.verify_steps) == (drafted, 43, 20)
    assert source in counts.source
    assert counts.accept_length == pytest.approx(1 + 43 / 20)  # 3.15, not SGLang's 64/20 = 3.20


def test_counter_fallback_and_no_speculation():
    engine = SGLang({"kind": "sglang"}, EngineResources(model="/m"))
    assert engine.speculation({"meta_info": {"completion_tokens": 64}}, {}, 64) is None
    counts = engine.speculation(
        {"meta_info": {}}, {"sglang:spec_verify_calls_total": 20.0, "sglang:generation_tokens_total": 64.0}, 64
    )
    # without the server's args, 0.4.x/0.5.4 say how many steps verified, not how many tokens were drafted
    assert (counts.verify_steps, counts.accepted, counts.drafted) == (20, 43, None)
    assert math.isnan(counts.acceptance_rate) and counts.accept_length == pytest.approx(1 + 43 / 20)


def test_cumulative_stream_tokens_and_text():
    # Default (no --incremental-streaming-output): text and output_ids are cumulative (tokenizer_manager.py).
    events = [
        {"text": "Hel", "output_ids": [1], "meta_info": {"completion_tokens": 1}},
        {"text": "Hello wor", "output_ids": [1, 2, 3], "meta_info": {"completion_tokens": 3}},
        {
            "text": "Hello world",
            "output_ids": [1, 2, 3, 4],
            "meta_info": {"completion_tokens": 4, "finish_reason": {"type": "length", "length": 4}},
        },
    ]
    engine = SGLang({"kind": "sglang"}, EngineResources(model="/m"))
    assert engine.tokens_per_event(events) == [1, 2, 1]
    assert engine.response_text(events) == "Hello world"
    assert engine.tokens_generated(engine.engine_fields(events)) == 4
    incremental = [
        {"text": "Hel", "output_ids": [1], "meta_info": {"completion_tokens": 1}},
        {"text": "lo", "output_ids": [2], "meta_info": {"completion_tokens": 2}},
    ]
    assert engine.response_text(incremental) == "Hello"


class _Info(BaseHTTPRequestHandler):
    """/get_server_info as SGLang < 0.5.10 answers it (python/sglang/srt/entrypoints/http_server.py), or nothing."""

    answer: dict | None = None

    def do_GET(self) -> None:
        body = json.dumps(self.answer).encode() if self.answer is not None and self.path == "/get_server_info" else b""
        self.send_response(200 if body else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args) -> None:
        pass


@pytest.fixture
def info_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Info)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def test_check_started_reads_server_args_or_says_it_could_not(info_server):
    url = f"http://127.0.0.1:{info_server.server_address[1]}"
    eagle = configuration(**{"--speculative-algorithm": "EAGLE3"})
    engine = SGLang({"kind": "sglang"}, EngineResources(model="m"))
    _Info.answer = None
    assert "were not checked" in engine.check_started(url, eagle)["warning"]
    _Info.answer = {"version": "0.5.4", "speculative_algorithm": "EAGLE3", "speculative_num_draft_tokens": 3}
    facts = engine.check_started(url, eagle)
    assert facts["version"] == "0.5.4" and "warning" not in facts
    assert engine.server_args["speculative_num_draft_tokens"] == 3
    _Info.answer = {"version": "0.5.4", "speculative_algorithm": None}
    with pytest.raises(RuntimeError, match="asked for speculative algorithm EAGLE3 but the server runs None"):
        engine.check_started(url, eagle)


class _Chat(BaseHTTPRequestHandler):
    """/v1/models and a non-streamed /v1/chat/completions as SGLang 0.5.10.post1 answers them
    (srt/entrypoints/openai/protocol.py ModelCard, ChatCompletionResponse); ``status`` 400 for a model
    without a chat template."""

    status = 200
    posted: ClassVar[list] = []

    def do_GET(self) -> None:
        self._answer(
            200, {"object": "list", "data": [{"id": "/m", "object": "model", "owned_by": "sglang", "root": "/m"}]}
        )

    def do_POST(self) -> None:
        _Chat.posted.append((self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
        body = {
            "id": "1",
            "object": "chat.completion",
            "model": "/m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
        }
        self._answer(self.status, body if self.status == 200 else {"object": "error", "message": "no chat template"})

    def _answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args) -> None:
        pass


def test_chat_template_goes_through_chat_completions():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        engine = SGLang({"kind": "sglang"}, EngineResources(model="/m"))
        assert engine.apply_chat_template(url, "Hello") == "Hello"  # templated by the server in each request
        path, probe = _Chat.posted[-1]
        assert path == "/v1/chat/completions" and probe["stream"] is False and "stream_options" not in probe
        path, body = engine.generation(GenerationRequest("Hello", 16, 0.0, True, 3))
        assert path == "/v1/chat/completions" and body["messages"] == [{"role": "user", "content": "Hello"}]
        assert body["ignore_eos"] is True and body["stream_options"] == {"include_usage": True}
        # ChatCompletionStreamResponse chunks (serving_chat.py): deltas, then a usage chunk with no choices
        events = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "length"}]},
            {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}},
        ]
        assert engine.response_text(events) == "Hello" and engine.tokens_per_event(events) == [0, 1, 1, 0]
        fields = engine.engine_fields(events)
        assert engine.tokens_generated(fields) == 2 and fields["finish_reason"] == "length"
        assert engine.speculation(fields, {}, 2) is None  # chat chunks carry no meta_info
        _Chat.status = 400
        with pytest.raises(RuntimeError, match=r"SGLang /v1/chat/completions answered 400.*--chat-template"):
            SGLang({"kind": "sglang"}, EngineResources(model="/m")).apply_chat_template(url, "Hello")
    finally:
        _Chat.status = 200
        server.shutdown()
