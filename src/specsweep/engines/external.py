"""An OpenAI-compatible endpoint someone else runs: no launch, no teardown.

Only what any OpenAI-compatible server offers is assumed (``/v1/models``, streamed
``/v1/completions`` with ``ignore_eos``); engine-specific extras are read when present
(llama-server ``timings``, vLLM ``metrics``, either's Prometheus counters).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import requests

from specsweep.config import Configuration
from specsweep.engines import openai
from specsweep.engines.base import Engine


class External(openai.OpenAICompletions, Engine):
    kind: ClassVar[str] = "external"
    launches: ClassVar[bool] = False
    health_path: ClassVar[str] = "/v1/models"  # /health is not part of the OpenAI API
    counters: ClassVar[tuple[str, ...]] = openai.VLLM_COUNTERS + openai.LLAMACPP_COUNTERS

    @classmethod
    def log_format_of(cls, settings: dict[str, Any]) -> str:
        """``external.log_format``: the endpoint's log is whichever engine's runs behind it."""
        return (settings.get("external") or {}).get("log_format", "none")

    def __init__(self, settings: dict[str, Any], resources: Any) -> None:
        super().__init__(settings, resources)
        self.model_name: str | None = None

    @property
    def options(self) -> dict[str, Any]:
        return self.settings.get("external") or {}

    def base_url(self, host: str, port: int) -> str:
        return str(self.options["base_url"]).rstrip("/")

    def command(self, configuration: Configuration, host: str, port: int) -> list[str]:
        return []  # nothing to launch

    def check_started(self, base_url: str, configuration: Configuration) -> dict[str, Any]:
        self.model_name = openai.served_model(base_url, self.options.get("model_name"))
        models = requests.get(base_url + "/v1/models", timeout=10).json()
        owner = next((m.get("owned_by") for m in models.get("data") or [] if m.get("id") == self.model_name), None)
        return {"version": None, "served_model": self.model_name, "owned_by": owner, "base_url": base_url}


class AttachedServer:
    """Stands in for the launched process of a managed server: there is none, so it never exits."""

    pid = None
    returncode = None

    def poll(self) -> None:
        return None

    def wait(self, timeout: float | None = None) -> None:
        return None


@contextlib.contextmanager
def attach(settings: dict[str, Any], log_path: Path) -> Iterator[AttachedServer]:
    """Use an endpoint without launching it; copy what its log (``external.server_log``) gained meanwhile."""
    source = (settings.get("external") or {}).get("server_log")
    source_path = Path(source).expanduser() if source else None
    offset = source_path.stat().st_size if source_path and source_path.exists() else 0
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield AttachedServer()
    finally:
        with open(log_path, "wb") as log:
            if source_path and source_path.exists():
                with open(source_path, "rb") as handle:
                    handle.seek(offset)
                    shutil.copyfileobj(handle, log)
