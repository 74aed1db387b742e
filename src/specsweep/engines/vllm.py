"""vLLM (``vllm serve MODEL``), launched from an installed package on a GPU node.

Facts from vLLM's source (see shared notes engine-formats.md §2; vllm/entrypoints/openai/api_server.py,
vllm/config/speculative.py, vllm/v1/metrics/loggers.py):
* ``--speculative-config`` is one JSON argument,
  e.g. ``{"method": "eagle3", "model": ..., "num_speculative_tokens": 3}``;
* the port is bound before the engine is built: TCP connects early and HTTP requests hang, so
  ``/health`` is polled with a short timeout and a timeout counts as not ready;
* OpenAI ``/v1/completions`` streaming with ``ignore_eos`` and ``stream_options.include_usage``;
* ``POST /reset_prefix_cache`` exists only with ``VLLM_SERVER_DEV_MODE=1`` and may answer 200 with
  ``{"success": false}``;
* counters ``vllm:spec_decode_num_{drafts,draft_tokens,accepted_tokens}_total`` (labels ``model_name``,
  ``engine``) and ``vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}`` (per draft position,
  ``vllm/v1/spec_decode/metrics.py``); per-request ``metrics.speculative_decoding`` only with
  ``--per-request-spec-decode-metrics`` (0.33; 0.25.0 has neither the flag nor the field: the counters are
  its only per-run source);
* the stats lines (``Engine 000: Avg ...``, ``SpecDecoding metrics: ...``) are logged every
  ``VLLM_LOG_STATS_INTERVAL`` seconds (``vllm/envs.py`` 0.25.0: a positive float, default 10, read by the
  API server's ``_force_log`` loop in ``vllm/entrypoints/serve/utils/server_utils.py``);
* chat templates: ``POST /tokenize`` with ``messages`` renders the served model's template to token ids
  (``add_special_tokens`` false: the template carries BOS), ``POST /detokenize`` gives its text
  (``vllm/entrypoints/serve/tokenize/protocol.py`` 0.25.0); ``/v1/completions`` then must not add special
  tokens again (``CompletionRequest.add_special_tokens``, default true);
* the EngineCore is a ``multiprocessing`` child of the API server (``vllm/v1/engine/utils.py``,
  ``context.Process``), without a session of its own: it stays in the server's process group.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any, ClassVar

import requests

from specsweep.engines import openai
from specsweep.engines.base import Engine, GenerationRequest, check_loaded_model, render_flags
from specsweep.record.configuration import Configuration
from specsweep.record.errors import ConfigError

SPEC_CONFIG = "--speculative-config"
NO_PREFIX_CACHE = "--no-enable-prefix-caching"
PER_REQUEST_SPEC = "--per-request-spec-decode-metrics"  # 0.33
STATS_INTERVAL = "VLLM_LOG_STATS_INTERVAL"
# Seconds between stats lines: vLLM's 10 s leave a short session without a single profile row; one line a
# second costs the API server one log write. A configuration's env sets its own.
STATS_INTERVAL_S = "1"
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
# The keys --speculative-config accepts: the fields of SpeculativeConfig in vllm-0.25.0's
# vllm/config/speculative.py (a pydantic dataclass with extra="forbid": any other key fails the launch, on a GPU
# node, after the plan). Kept equal to tests/fixtures/vllm_speculative_config.json, read from the released wheel
# by tests/fixtures/extract_vllm_speculative_fields.py.
SPECULATIVE_CONFIG_FIELDS = frozenset(
    {
        "enforce_eager",
        "num_speculative_tokens",
        "model",
        "method",
        "draft_tensor_parallel_size",
        "tensor_parallel_size",
        "quantization",
        "moe_backend",
        "attention_backend",
        "max_model_len",
        "revision",
        "code_revision",
        "disable_padded_drafter_batch",
        "use_local_argmax_reduction",
        "use_heterogeneous_vocab",
        "prompt_lookup_max",
        "prompt_lookup_min",
        "parallel_drafting",
        "target_model_config",
        "target_parallel_config",
        "num_speculative_tokens_per_batch_size",
        "draft_model_config",
        "draft_parallel_config",
        "suffix_decoding_max_tree_depth",
        "suffix_decoding_max_cached_requests",
        "suffix_decoding_max_spec_factor",
        "suffix_decoding_min_token_prob",
        "draft_load_config",
        "rejection_sample_method",
        "synthetic_acceptance_rates",
        "synthetic_acceptance_length",
        "draft_sample_method",
    }
)


class VLLM(openai.OpenAICompletions, Engine):
    kind: ClassVar[str] = "vllm"
    default_port: ClassVar[int] = 8000
    # EngineArgs.max_num_seqs (unset: vLLM's default for the hardware)
    slot_flags: ClassVar[tuple[str, ...]] = ("--max-num-seqs",)
    default_launcher: ClassVar[tuple[str, ...]] = ("vllm", "serve")
    health_timeout_s: ClassVar[float] = 1.0  # the port accepts connections long before the server answers
    counters: ClassVar[tuple[str, ...]] = openai.VLLM_COUNTERS
    # vllm/entrypoints/openai/cli_args.py: the model (positional, or --model), --host, --port, --uds (a unix
    # socket instead of host and port); argparse takes prefixes.
    owned_flags: ClassVar[dict[str, str]] = {
        "--model": "model",
        "--host": "host",
        "--port": "port",
        "--uds": "host",
        "--api-key": "api_key_env",
        "VLLM_API_KEY": "api_key_env",
    }
    flag_prefixes_accepted: ClassVar[bool] = True
    resolves_model_ids: ClassVar[bool] = True  # a hub id as the model (and a speculative draft's)
    log_format: ClassVar[str] = "vllm"
    packages: ClassVar[tuple[str, ...]] = ("vllm", "torch", "transformers", "triton")

    chat_template_route: ClassVar[str] = "/tokenize + /detokenize"

    def __init__(self, settings: dict[str, Any], resources: Any) -> None:
        super().__init__(settings, resources)
        self.model_name: str | None = None
        self.flushable = True
        self.templated = False  # prompts rendered by /tokenize already carry the template's special tokens

    def command(self, configuration: Configuration, host: str, port: int) -> list[str]:
        if not self.resources.model:
            raise ValueError("vllm needs a model (engines/<name>/model naming a models entry)")
        argv = [*self.launcher(), self.resources.model, "--host", host, "--port", str(port)]
        return argv + render_flags(configuration.args, self.placeholders())

    @classmethod
    def check_configuration(cls, configuration: Configuration) -> list[str]:
        where = f"configurations/{configuration.name}/args/{SPEC_CONFIG}"
        raw = configuration.args.get(SPEC_CONFIG)
        warnings = []
        if raw not in (None, False):
            text = str(raw).replace("{draft_model}", "DRAFT").replace("{model}", "MODEL")
            try:
                spec = json.loads(text)
            except json.JSONDecodeError as error:
                raise ConfigError(
                    f"{where}: not valid JSON ({error}); write it as one JSON object string, e.g. "
                    f'\'{{"method": "eagle3", "model": "{{draft_model}}", '
                    f'"num_speculative_tokens": 3}}\''
                ) from None
            if not isinstance(spec, dict) or ("method" not in spec and "model" not in spec):
                raise ConfigError(f'{where}: give at least "method" (e.g. eagle3, ngram) or "model"')
            unknown = sorted(set(spec) - SPECULATIVE_CONFIG_FIELDS)
            if unknown:
                raise ConfigError(f"{where}: {_unknown_keys(unknown)}")
        if NO_PREFIX_CACHE not in configuration.args and configuration.env.get("VLLM_SERVER_DEV_MODE") != "1":
            warnings.append(
                f"configurations/{configuration.name}: vLLM can only flush its prefix cache between "
                f"runs with env VLLM_SERVER_DEV_MODE=1; set it or add {NO_PREFIX_CACHE}: true"
            )
        return warnings

    def check_started(self, base_url: str, configuration: Configuration) -> dict[str, Any]:
        self.model_name = openai.served_model(self.http, base_url, None)
        self.flushable = NO_PREFIX_CACHE not in configuration.args
        try:
            version = self.http.get(base_url + "/version", timeout=5).json().get("version")
        except (requests.RequestException, ValueError):
            version = None
        # vllm/entrypoints/openai/serving_models.py: each ModelCard's root is the path or id it was loaded from.
        cards = self.http.get(base_url + "/v1/models", timeout=10).json().get("data") or []
        root = next((c.get("root") for c in cards if c.get("id") == self.model_name), None)
        loaded = check_loaded_model(root, self.resources.model, configuration, "/v1/models root")
        started: dict[str, Any] = {"version": version, "served_model": self.model_name, "model_path": loaded}
        if (warning := per_request_warning(version, configuration)) is not None:
            started["warning"] = warning
        return started

    def launch_env(self) -> dict[str, str]:
        """The API key (vllm/envs.py: VLLM_API_KEY, as --api-key) and the stats interval (a configuration's
        own env wins: the session lays it over these)."""
        key = self.api_key()
        return {STATS_INTERVAL: STATS_INTERVAL_S, **({"VLLM_API_KEY": key} if key else {})}

    def request_model(self) -> str:
        return self.model_name or self.resources.model or ""

    def flush_cache(self, base_url: str) -> None:
        if not self.flushable:
            return  # prefix caching is off: nothing to flush
        response = self.http.post(base_url + "/reset_prefix_cache", timeout=30)
        refused = (
            response.status_code == 200
            and response.text.strip().startswith("{")
            and response.json().get("success") is False
        )
        if response.status_code != 200 or refused:
            raise RuntimeError(
                f"vLLM /reset_prefix_cache answered {response.status_code} {response.text[:200]!r}; "
                f"start it with env VLLM_SERVER_DEV_MODE=1 or add {NO_PREFIX_CACHE}: true"
            )

    def apply_chat_template(self, base_url: str, text: str) -> str:
        messages = [{"role": "user", "content": text}]
        model = self.request_model()
        body = {"model": model, "messages": messages, "add_generation_prompt": True}
        tokens = self._post(base_url, "/tokenize", body)
        self.templated = True
        return str(self._post(base_url, "/detokenize", {"model": model, "tokens": tokens["tokens"]})["prompt"])

    def _post(self, base_url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.http.post(base_url + path, json=body, timeout=30)
        if response.status_code != 200:
            raise RuntimeError(
                f"benchmark.chat_template: vLLM {path} answered {response.status_code} {response.text[:200]!r} "
                f"(the served model needs a chat template: give --chat-template in args, or set chat_template: false)"
            )
        return dict(response.json())

    def generation(self, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
        path, body = openai.completion_request(self.request_model(), request)
        if self.templated:
            body["add_special_tokens"] = False  # the rendered template holds them (BOS) already
        return path, body

    def more_counters(self, metrics: str) -> dict[str, float]:
        """The accepted tokens of each draft position as ``PER_POSITION[i]``."""
        return per_position_counters(metrics)


def _unknown_keys(unknown: list[str]) -> str:
    """Each key vLLM's SpeculativeConfig does not have, with the closest field it has."""
    import difflib

    said = []
    for key in unknown:
        close = difflib.get_close_matches(key, sorted(SPECULATIVE_CONFIG_FIELDS), n=1)
        said.append(f"'{key}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
    return (
        f"{', '.join(said)} {'is not a key' if len(said) == 1 else 'are not keys'} of vLLM's SpeculativeConfig "
        "(vllm/config/speculative.py, which refuses unknown keys at launch); see its fields there"
    )


def per_position_counters(text: str) -> dict[str, float]:
    """``PER_POSITION[i]`` -> accepted tokens at draft position i, summed over engines (as
    ``vllm bench serve``'s ``fetch_spec_decode_metrics`` reads them, vllm/benchmarks/serve.py 0.25.0)."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith(PER_POSITION + "{"):
            continue
        labels, _, value = line.rpartition("}")
        position = re.search(r'position="(\d+)"', labels)
        with contextlib.suppress(ValueError, IndexError):
            if position is not None:
                key = f"{PER_POSITION}[{position[1]}]"
                found[key] = found.get(key, 0.0) + float(value.split()[0])
    return found


def per_position_rates(delta: dict[str, float]) -> list[float] | None:
    """Acceptance rate at each draft position from a run's (or window's) counter deltas: accepted at
    position i / verify steps, as vLLM's log line and ``vllm bench serve`` define it; None without drafts."""
    drafts = delta.get("vllm:spec_decode_num_drafts_total")
    positions = sorted(int(k[len(PER_POSITION) + 1 : -1]) for k in delta if k.startswith(PER_POSITION + "["))
    if not drafts or not positions:
        return None
    return [delta.get(f"{PER_POSITION}[{i}]", 0.0) / drafts for i in range(positions[-1] + 1)]


def per_request_warning(version: Any, configuration: Configuration) -> str | None:
    """vLLM 0.33+ reports speculation per request only when asked: say so for a speculative configuration."""
    if configuration.args.get(SPEC_CONFIG) in (None, False) or PER_REQUEST_SPEC in configuration.args:
        return None
    parts = re.match(r"(\d+)\.(\d+)", str(version or ""))
    if parts is None or (int(parts[1]), int(parts[2])) < (0, 33):
        return None
    return (
        f"vLLM {version} reports speculation per request only with {PER_REQUEST_SPEC} summary; without it "
        f"each run's counts come from /metrics counter deltas"
    )
