"""SGLang (``python -m sglang.launch_server``), launched from an installed package on a GPU node.

Formats read from the released wheels (``pip download --no-deps sglang==X``) 0.4.3.post2,
0.4.10.post2, 0.5.4, 0.5.10 and 0.5.23:
* readiness: ``/health`` answers 503 until the warmup request is done (0.4.10+,
  ``entrypoints/http_server.py``), after which the log says "The server is fired up and ready to roll!";
* native ``POST /generate`` with ``sampling_params`` (``max_new_tokens``, ``temperature``,
  ``ignore_eos``; ``sampling_seed`` only from 0.5.x, so it is sent only when sampling);
  streamed events carry cumulative ``text`` and ``output_ids`` unless the server runs with
  ``--incremental-streaming-output``, and a cumulative ``meta_info.completion_tokens``;
* per-request speculation in the final event's ``meta_info`` (``managers/tokenizer_manager.py``):
  ``spec_verify_ct`` (all versions), ``spec_accept_token_num``/``spec_draft_token_num`` (0.5.10),
  renamed ``spec_num_correct_drafts``/``spec_num_proposed_drafts`` (0.5.23);
* ``POST /flush_cache`` (answers 400 while requests run); ``/server_info`` (0.5.10+) or
  ``/get_server_info`` with ``version`` and the server args;
* chat templates: SGLang renders one only inside ``/v1/chat/completions`` (0.5.10.post1: its ``/tokenize``
  takes a prompt, not messages, ``srt/entrypoints/openai/serving_tokenize.py``), so with
  ``benchmark.chat_template`` the requests go there (``ignore_eos``, ``seed``, ``stream_options``: its
  ``ChatCompletionRequest``); its chunks carry no ``meta_info``, so speculation comes from ``/metrics``
  (0.5.23) or the server log only.
"""

from __future__ import annotations

from typing import Any, ClassVar

from specsweep.engines import openai
from specsweep.engines.base import Engine, GenerationRequest, check_loaded_model, render_flags
from specsweep.record.configuration import Configuration
from specsweep.record.errors import ConfigError
from specsweep.record.speculation import SpeculationCounts

VERIFY_CALLS = "sglang:spec_verify_calls_total"  # 0.5.23 (tokenizer-side counter)
GENERATION_TOKENS = "sglang:generation_tokens_total"


class SGLang(Engine):
    kind: ClassVar[str] = "sglang"
    default_port: ClassVar[int] = 30000
    # server_args.py max_running_requests (unset: SGLang sizes it from the memory pool)
    slot_flags: ClassVar[tuple[str, ...]] = ("--max-running-requests",)
    default_launcher: ClassVar[tuple[str, ...]] = ("python3", "-m", "sglang.launch_server")
    counters: ClassVar[tuple[str, ...]] = (VERIFY_CALLS, GENERATION_TOKENS)
    # sglang/srt/server_args.py: --model-path (alias --model), --host, --port; argparse takes prefixes.
    owned_flags: ClassVar[dict[str, str]] = {
        "--model-path": "model",
        "--model": "model",
        "--host": "host",
        "--port": "port",
        "--api-key": "api_key_env",
    }
    flag_prefixes_accepted: ClassVar[bool] = True
    resolves_model_ids: ClassVar[bool] = True  # a hub id as the model (and a speculative draft's)
    log_format: ClassVar[str] = "sglang"
    packages: ClassVar[tuple[str, ...]] = ("sglang", "torch", "transformers", "flashinfer-python", "triton")

    chat_template_route: ClassVar[str] = openai.CHAT_COMPLETIONS + " (each request)"

    def __init__(self, settings: dict[str, Any], resources: Any) -> None:
        super().__init__(settings, resources)
        self.server_args: dict[str, Any] = {}
        self.chat_model: str | None = None  # set by apply_chat_template: requests go to /v1/chat/completions

    def apply_chat_template(self, base_url: str, text: str) -> str:
        """The text unchanged: SGLang templates it in each request. One request first, so that a model
        without a chat template fails here, named, before anything is measured."""
        model = openai.served_model(self.http, base_url, None)
        path, body = openai.chat_request(model, GenerationRequest(text, 1, 0.0, False, 0))
        body.pop("stream_options")  # allowed with streaming only
        response = self.http.post(base_url + path, json={**body, "stream": False}, timeout=60)
        if response.status_code != 200:
            raise RuntimeError(
                f"benchmark.chat_template: SGLang {path} answered {response.status_code} {response.text[:200]!r} "
                f"(the served model needs a chat template: give --chat-template in args, or set chat_template: false)"
            )
        self.chat_model = model
        return text

    def command(self, configuration: Configuration, host: str, port: int) -> list[str]:
        if not self.resources.model:
            raise ValueError("sglang needs a model path (engines/<name>/model naming a models entry)")
        argv = [*self.launcher(), "--model-path", self.resources.model, "--host", host, "--port", str(port)]
        # sglang/srt/server_args.py reads the key from --api-key only (redacted wherever argv is written).
        key = ["--api-key", self.api_key() or ""] if self.settings.get("api_key_env") else []
        return argv + key + render_flags(configuration.args, self.placeholders())

    @classmethod
    def check_configuration(cls, configuration: Configuration) -> list[str]:
        args = configuration.args
        where = f"configurations/{configuration.name}"
        algorithm = str(args.get("--speculative-algorithm") or "").upper()
        warnings = []
        if algorithm.startswith("EAGLE") and not (
            args.get("--speculative-draft-model-path") or args.get("--speculative-draft-model")
        ):
            warnings.append(f"{where}: --speculative-algorithm {algorithm} without --speculative-draft-model-path")
        steps, topk, tokens = (
            _int(args.get(f))
            for f in ("--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens")
        )
        if None in (steps, topk, tokens):
            return warnings
        assert steps is not None and topk is not None and tokens is not None
        if steps * topk + 1 < tokens:
            raise ConfigError(
                f"{where}: --speculative-num-draft-tokens {tokens} is more than the draft tree holds "
                f"(num_steps {steps} x topk {topk} + 1 = {steps * topk + 1}); lower it"
            )
        if topk == 1 and tokens != steps + 1:
            warnings.append(
                f"{where}: with --speculative-eagle-topk 1, SGLang expects --speculative-num-draft-tokens "
                f"= --speculative-num-steps + 1 = {steps + 1}, not {tokens}"
            )
        return warnings

    def check_started(self, base_url: str, configuration: Configuration) -> dict[str, Any]:
        info: dict[str, Any] = {}
        for path in ("/server_info", "/get_server_info"):  # renamed in 0.5.10
            response = self.http.get(base_url + path, timeout=10)
            if response.status_code == 200:
                info = response.json()
                break
        self.server_args = info
        wanted = str(configuration.args.get("--speculative-algorithm") or "").upper() or None
        if not info:  # e.g. a proxy in front of the server: say so rather than skip the check silently
            return {
                "version": None,
                "warning": "neither /server_info nor /get_server_info answered: the "
                "speculative settings the server runs were not checked"
                + (" (and drafted tokens of SGLang <= 0.5.4 are unknown)" if wanted else ""),
            }
        running = str(info.get("speculative_algorithm") or "").upper() or None
        if wanted != running and self.launches:  # an endpoint someone else runs is measured as it is
            raise RuntimeError(
                f"configuration {configuration.name}: asked for speculative algorithm {wanted} but "
                f"the server runs {running}; check the server log"
            )
        check_loaded_model(info.get("model_path"), self.resources.model, configuration, "/server_info model_path")
        keys = (
            "speculative_algorithm",
            "speculative_num_steps",
            "speculative_eagle_topk",
            "speculative_num_draft_tokens",
            "tp_size",
            "model_path",
        )
        return {"version": info.get("version"), **{k: info.get(k) for k in keys}}

    def generation(self, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
        if self.chat_model is not None:
            return openai.chat_request(self.chat_model, request)
        sampling: dict[str, Any] = {
            "max_new_tokens": request.max_tokens,
            "temperature": request.temperature,
            "ignore_eos": request.ignore_eos,
        }
        if request.temperature > 0:
            sampling["sampling_seed"] = request.seed  # 0.5.x; greedy decoding needs no seed
        return "/generate", {"text": request.prompt, "sampling_params": sampling, "stream": True}

    @property
    def exact_events(self) -> bool:
        return self.chat_model is None  # /generate's running completion_tokens; chat chunks are OpenAI's

    def event_tokens(self, event: dict[str, Any]) -> int:
        if self.chat_model is not None:
            return openai.chunk_tokens(event)
        # Meaningful only as a difference between events: see tokens_per_event.
        return int((event.get("meta_info") or {}).get("completion_tokens") or 0)

    def tokens_per_event(self, events: list[dict[str, Any]]) -> list[int]:
        if self.chat_model is not None:
            return super().tokens_per_event(events)
        totals = [self.event_tokens(e) for e in events]
        return [b - a for a, b in zip([0, *totals], totals, strict=False)]

    def event_text(self, event: dict[str, Any]) -> str:
        if self.chat_model is not None:
            return openai.chunk_text(event)
        return str(event.get("text", ""))

    def response_text(self, events: list[dict[str, Any]]) -> str:
        if self.chat_model is not None:
            return super().response_text(events)
        if not events:
            return ""
        last = events[-1]
        cumulative = len(last.get("output_ids") or []) == self.event_tokens(last) and len(events) > 1
        return self.event_text(last) if cumulative else super().response_text(events)

    def engine_fields(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        if self.chat_model is not None:
            return openai.final_fields(events)
        final = next((e for e in reversed(events) if (e.get("meta_info") or {}).get("finish_reason")), {})
        return {"meta_info": final.get("meta_info", {})}

    def tokens_generated(self, fields: dict[str, Any]) -> int | None:
        if self.chat_model is not None:
            return openai.completion_tokens(fields)
        tokens = fields.get("meta_info", {}).get("completion_tokens")
        return int(tokens) if tokens is not None else None

    def prompt_tokens(self, fields: dict[str, Any]) -> int | None:
        if self.chat_model is not None:
            return super().prompt_tokens(fields)
        tokens = fields.get("meta_info", {}).get("prompt_tokens")  # /generate's meta_info (0.4.3-0.5.23)
        return int(tokens) if isinstance(tokens, int) else None

    def speculation(
        self, fields: dict[str, Any], counter_delta: dict[str, float], emitted: int
    ) -> SpeculationCounts | None:
        per_step = self.draft_tokens_per_step()
        return meta_info_speculation(fields.get("meta_info", {}), emitted, per_step) or counter_speculation(
            counter_delta, emitted, per_step
        )

    # window_speculation: none (the default). Its counters give verify steps, and accepted tokens only as the
    # tokens generated less one prefill token per request and one per step (from_verify_steps), which a window
    # of overlapping requests does not isolate: load.csv's speculation columns of SGLang stay empty.

    def draft_tokens_per_step(self) -> int | None:
        """Drafted tokens per verify step, as SGLang counts them: num_draft_tokens - 1."""
        tokens = _int(self.server_args.get("speculative_num_draft_tokens"))
        return tokens - 1 if tokens else None

    def flush_cache(self, base_url: str) -> None:
        response = self.http.post(base_url + "/flush_cache", timeout=30)
        if response.status_code != 200:
            raise RuntimeError(
                f"SGLang /flush_cache answered {response.status_code}: {response.text[:200]} "
                f"(400 means requests are still running: runs need an idle server, so stop any "
                f"other client of {base_url})"
            )


def meta_info_speculation(meta: dict[str, Any], emitted: int, per_step: int | None) -> SpeculationCounts | None:
    """Counts from ``meta_info`` of any version 0.4.3-0.5.23 (None without speculation)."""
    steps = meta.get("spec_verify_ct")
    if not steps:
        return None
    for accepted_key, drafted_key, version in (
        ("spec_num_correct_drafts", "spec_num_proposed_drafts", "0.5.23"),
        ("spec_accept_token_num", "spec_draft_token_num", "0.5.10"),
    ):
        if accepted_key in meta:
            return SpeculationCounts(
                drafted=int(meta[drafted_key]),
                accepted=int(meta[accepted_key]),
                emitted=emitted,
                verify_steps=int(steps),
                source=f"response meta_info ({version} keys)",
            )
    # <= 0.5.4: only the verify count.
    return from_verify_steps(
        int(steps), int(meta.get("completion_tokens", emitted)), emitted, per_step, "response meta_info spec_verify_ct"
    )


def counter_speculation(delta: dict[str, float], emitted: int, per_step: int | None) -> SpeculationCounts | None:
    steps = int(delta.get(VERIFY_CALLS, 0))
    if not steps:
        return None
    return from_verify_steps(
        steps, int(delta.get(GENERATION_TOKENS, emitted)), emitted, per_step, "/metrics sglang:spec_verify_calls_total"
    )


def from_verify_steps(
    steps: int, completion: int, emitted: int, per_step: int | None, source: str
) -> SpeculationCounts:
    """Counts from the verify-step count alone. Every verify step emits its accepted drafts plus one
    token, and the first token comes from prefill: accepted = completion - 1 - steps. Drafted tokens
    are steps x (num_draft_tokens - 1) when the server's args are known, else unknown (None)."""
    accepted = max(completion - 1 - steps, 0)
    return SpeculationCounts(
        drafted=steps * per_step if per_step else None,
        accepted=accepted,
        emitted=emitted,
        verify_steps=steps,
        source=source,
    )


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
