"""The OpenAI-compatible streaming ``/v1/completions`` protocol, shared by vLLM and external endpoints.

Formats: OpenAI completions as served by vLLM (``vllm/entrypoints/openai/protocol.py``:
``CompletionStreamResponse``; with ``stream_options.include_usage`` the last chunk carries
``usage`` and, from vLLM 0.33 with ``--per-request-spec-decode-metrics``, ``metrics``), and by
llama-server b11434 (checked on the real server: the last chunk has ``usage`` and ``timings``,
with ``draft_n``/``draft_n_accepted`` when it drafted). ``ignore_eos`` is an extension that vLLM,
SGLang and llama-server all accept.
"""

from __future__ import annotations

from typing import Any

import requests

from specsweep.engines.base import GenerationRequest
from specsweep.record.speculation import SpeculationCounts, count

COMPLETIONS = "/v1/completions"
# The server renders the model's chat template itself (vllm entrypoints/openai/chat_completion, sglang
# srt/entrypoints/openai/serving_chat.py): streamed chunks carry choices[].delta.content.
CHAT_COMPLETIONS = "/v1/chat/completions"
# Exposed counter names (vllm/v1/metrics/loggers.py; llama.cpp tools/server/server-context.cpp).
VLLM_COUNTERS = (
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
    "vllm:spec_decode_num_emitted_tokens_total",  # V0 only
)
LLAMACPP_COUNTERS = (
    "llamacpp:spec_decode_num_drafts_total",
    "llamacpp:spec_decode_num_draft_tokens_total",
    "llamacpp:spec_decode_num_accepted_tokens_total",
)


def served_model(http: requests.Session, base_url: str, configured: str | None) -> str:
    """The ``model`` field requests must carry: the configured name, else the first of /v1/models."""
    if configured:
        return configured
    models = http.get(base_url + "/v1/models", timeout=10).json().get("data") or []
    if not models:
        raise RuntimeError(f"{base_url}/v1/models lists no model; set the served model name in the config")
    return str(models[0]["id"])


def completion_request(model: str, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
    return COMPLETIONS, {
        "model": model,
        "prompt": request.prompt,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "ignore_eos": request.ignore_eos,
        "seed": request.seed,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def chat_request(model: str, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
    """The same generation as one user turn, templated by the server."""
    _, body = completion_request(model, request)
    del body["prompt"]
    return CHAT_COMPLETIONS, {**body, "messages": [{"role": "user", "content": request.prompt}]}


def chunk_text(event: dict[str, Any]) -> str:
    """Text of a completions chunk (``choices[].text``) or a chat chunk (``choices[].delta.content``)."""
    return "".join(
        str(c.get("text") or (c.get("delta") or {}).get("content") or "") for c in event.get("choices") or []
    )


def chunk_tokens(event: dict[str, Any]) -> int:
    # A chunk does not say how many tokens it carries; one per text-bearing chunk is a lower bound
    # (vLLM batches speculative bursts). The run's token count comes from ``usage`` instead.
    return 1 if chunk_text(event) else 0


def final_fields(events: list[dict[str, Any]]) -> dict[str, Any]:
    usage = next((e["usage"] for e in reversed(events) if e.get("usage")), {})
    finish = next(
        (c.get("finish_reason") for e in reversed(events) for c in e.get("choices") or [] if c.get("finish_reason")),
        None,
    )
    fields: dict[str, Any] = {"usage": usage, "finish_reason": finish}
    for key in ("timings", "metrics", "system_fingerprint"):
        value = next((e[key] for e in reversed(events) if e.get(key)), None)
        if value is not None:
            fields[key] = value
    return fields


def completion_tokens(fields: dict[str, Any]) -> int | None:
    tokens = (fields.get("usage") or {}).get("completion_tokens")
    return int(tokens) if tokens is not None else None


def response_speculation(fields: dict[str, Any], emitted: int) -> SpeculationCounts | None:
    """Per-request counts: vLLM 0.33 ``metrics.speculative_decoding`` or llama-server ``timings``."""
    spec = (fields.get("metrics") or {}).get("speculative_decoding")
    if spec and spec.get("num_draft_tokens") is not None:
        # vllm/v1/metrics/stats.py RequestSpecDecodeMetrics.to_dict (0.33)
        return SpeculationCounts(
            drafted=int(spec["num_draft_tokens"]),
            accepted=int(spec["num_accepted_draft_tokens"]),
            emitted=emitted,
            verify_steps=int(spec["num_spec_steps"]) if spec.get("num_spec_steps") else None,
            source="response metrics.speculative_decoding",
        )
    timings = fields.get("timings") or {}
    # llama-server (tools/server/server-task.cpp): present only when something was drafted
    drafted, accepted = count(timings.get("draft_n")), count(timings.get("draft_n_accepted"))
    if drafted is not None and accepted is not None:
        return SpeculationCounts(drafted=drafted, accepted=accepted, emitted=emitted, source="response timings")
    return None


def counter_speculation(delta: dict[str, float], emitted: int) -> SpeculationCounts | None:
    """Counts from Prometheus counter deltas (vLLM V1/V0, llama.cpp), when anything was drafted."""
    for prefix in ("vllm:", "llamacpp:"):
        drafted = delta.get(f"{prefix}spec_decode_num_draft_tokens_total")
        if drafted:
            steps = delta.get(f"{prefix}spec_decode_num_drafts_total")
            return SpeculationCounts(
                drafted=int(drafted),
                accepted=int(delta.get(f"{prefix}spec_decode_num_accepted_tokens_total", 0)),
                emitted=emitted,
                verify_steps=int(steps) if steps else None,
                source="/metrics",
            )
    return None


def merge(response: SpeculationCounts | None, counters: SpeculationCounts | None) -> SpeculationCounts | None:
    """The response's counts, completed with the verify steps only the counters know."""
    if response is None:
        return counters
    if response.verify_steps is None and counters is not None and counters.verify_steps is not None:
        return SpeculationCounts(
            drafted=response.drafted,
            accepted=response.accepted,
            emitted=response.emitted,
            verify_steps=counters.verify_steps,
            source=f"{response.source} + /metrics",
        )
    return response


class OpenAICompletions:
    """Request and response handling shared by engines that speak OpenAI ``/v1/completions``.

    Mixed into an ``Engine``; ``model_name`` is the served model found by ``check_started``.
    """

    model_name: str | None = None

    def request_model(self) -> str:
        return self.model_name or ""

    def generation(self, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
        return completion_request(self.request_model(), request)

    def event_tokens(self, event: dict[str, Any]) -> int:
        return chunk_tokens(event)

    def event_text(self, event: dict[str, Any]) -> str:
        return chunk_text(event)

    def engine_fields(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        return final_fields(events)

    def tokens_generated(self, fields: dict[str, Any]) -> int | None:
        return completion_tokens(fields)

    def speculation(
        self, fields: dict[str, Any], counter_delta: dict[str, float], emitted: int
    ) -> SpeculationCounts | None:
        return merge(response_speculation(fields, emitted), counter_speculation(counter_delta, emitted))

    @classmethod
    def window_speculation(cls, counter_delta: dict[str, float]) -> SpeculationCounts | None:
        return counter_speculation(counter_delta, 0)  # totals: drafted, accepted and verify steps add up
