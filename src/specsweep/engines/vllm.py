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
  ``engine``); per-request ``metrics.speculative_decoding`` with ``--per-request-spec-decode-metrics`` (0.33).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import requests

from specsweep.engines import openai
from specsweep.engines.base import Engine, check_loaded_model, render_flags
from specsweep.plan.config import ConfigError, Configuration

SPEC_CONFIG = "--speculative-config"
NO_PREFIX_CACHE = "--no-enable-prefix-caching"


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
    log_format: ClassVar[str] = "vllm"
    packages: ClassVar[tuple[str, ...]] = ("vllm", "torch", "transformers", "triton")

    def __init__(self, settings: dict[str, Any], resources: Any) -> None:
        super().__init__(settings, resources)
        self.model_name: str | None = None
        self.flushable = True

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
        return {"version": version, "served_model": self.model_name, "model_path": loaded}

    def launch_env(self) -> dict[str, str]:
        key = self.api_key()  # vllm/envs.py: VLLM_API_KEY, as --api-key
        return {"VLLM_API_KEY": key} if key else {}

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
