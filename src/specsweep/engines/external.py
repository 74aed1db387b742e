"""An OpenAI-compatible endpoint someone else runs: no launch, no teardown.

Only what any OpenAI-compatible server offers is assumed (``/v1/models``, streamed
``/v1/completions`` with ``ignore_eos``); engine-specific extras are read when present
(llama-server ``timings``, vLLM ``metrics``, either's Prometheus counters).
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import requests

from specsweep.engines import openai
from specsweep.engines.base import Engine, EngineResources
from specsweep.engines.server import ServerError
from specsweep.record.configuration import Configuration


class External(openai.OpenAICompletions, Engine):
    kind: ClassVar[str] = "external"
    launches: ClassVar[bool] = False
    needs_model: ClassVar[bool] = False
    health_path: ClassVar[str] = "/v1/models"  # /health is not part of the OpenAI API
    counters: ClassVar[tuple[str, ...]] = openai.VLLM_COUNTERS + openai.LLAMACPP_COUNTERS

    @classmethod
    def log_format_of(cls, settings: dict[str, Any]) -> str:
        """``external.log_format``: the endpoint's log is whichever engine's runs behind it."""
        return (settings.get("external") or {}).get("log_format", "none")

    def __init__(self, settings: dict[str, Any], resources: Any) -> None:
        super().__init__(settings, resources)
        self.model_name: str | None = None

    @classmethod
    def create(cls, settings: dict[str, Any], resources: EngineResources) -> Engine:
        """An endpoint whose ``external.engine`` says what runs behind it is spoken to natively (SGLang's
        /generate and meta_info, llama-server's /completion and timings, each one's counters), never launched."""
        declared = (settings.get("external") or {}).get("engine")
        if not declared:
            return cls(settings, resources)
        from specsweep.engines import adapter_class  # the registry imports this module

        native = adapter_class(declared)
        attached = type(
            f"Attached{native.__name__}",
            (native,),
            {"launches": False, "base_url": cls.base_url, "command": cls.command, "options": cls.options},
        )
        return attached(settings, resources)

    @property
    def options(self) -> dict[str, Any]:
        return self.settings.get("external") or {}

    def base_url(self, host: str, port: int) -> str:
        return str(self.options["base_url"]).rstrip("/")

    def command(self, configuration: Configuration, host: str, port: int) -> list[str]:
        return []  # nothing to launch

    def is_ready(self, base_url: str) -> bool:
        """Ready when /v1/models answers an OpenAI model list. Someone else's server is already up, so an answer
        that is not one (404, an HTML page, a login wall) will not change by waiting: said at once."""
        url = base_url + self.health_path
        try:
            response = self.http.get(url, timeout=self.health_timeout_s)
        except requests.RequestException:
            return False  # not answering (yet): wait, up to benchmark.ready_timeout_s
        if response.status_code in (502, 503, 504):
            return False  # a proxy in front of a server that is starting
        if response.status_code in (401, 403):
            raise ServerError(
                f"{url} answered {response.status_code}: the endpoint requires an API key; set "
                f"engines/<name>/api_key_env to the environment variable that holds it"
                + (" (the one sent was refused)" if "Authorization" in self.http.headers else "")
            )
        kind = response.headers.get("Content-Type", "?").split(";")[0]
        if response.status_code == 200:
            try:
                listed = response.json()
            except ValueError:
                listed = None
            if isinstance(listed, dict) and isinstance(listed.get("data"), list):
                return True
        raise ServerError(
            f"{url} answered {response.status_code} ({kind}: {response.text[:120]!r}), not an OpenAI "
            f"model list: engines/<name>/external/base_url must be the root of an OpenAI-compatible "
            f"server (without /v1)"
        )

    def check_started(self, base_url: str, configuration: Configuration) -> dict[str, Any]:
        self.model_name = openai.served_model(self.http, base_url, self.options.get("model_name"))
        models = self.http.get(base_url + "/v1/models", timeout=10).json()
        owner = next((m.get("owned_by") for m in models.get("data") or [] if m.get("id") == self.model_name), None)
        return {"version": None, "served_model": self.model_name, "owned_by": owner, "base_url": base_url}


class AttachedServer:
    """Stands in for the launched process of a managed server: there is none, so it never exits."""

    pid = None
    returncode = None

    def __init__(self, log_source: Path | None = None, log_start: int = 0) -> None:
        # The endpoint's own log and its size at attach: the session's server.log is that log's
        # growth from there on, so an offset in it is the source's size minus log_start.
        self.log_source = log_source
        self.log_start = log_start

    def poll(self) -> None:
        return None

    def wait(self, timeout: float | None = None) -> None:
        return None


CONNECT_TIMEOUT_S = 10.0  # an endpoint that is running accepts a connection at once; a dropped one says so


def unreachable(base_url: str, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why nothing can answer at ``base_url`` (unknown host, connection refused, no answer), or None (also
    when requests go through a proxy, which only the proxy can judge)."""
    if requests.utils.get_environ_proxies(base_url):
        return None
    parts = urllib.parse.urlsplit(base_url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except socket.gaierror as error:
        return f"the host {host} is unknown ({error.strerror})"
    except ConnectionRefusedError:
        return f"nothing listens on {host}:{port} (connection refused)"
    except OSError as error:  # a timeout, no route to the host
        return f"{host}:{port} cannot be reached ({error.strerror or error})"


@contextlib.contextmanager
def attach(settings: dict[str, Any], log_path: Path, engine: str = "<engine>") -> Iterator[AttachedServer]:
    """Use an endpoint without launching it; copy what its log (``external.server_log``) gained meanwhile.
    An endpoint that cannot be reached at all is said at once, not after ``benchmark.ready_timeout_s``."""
    base_url = (settings.get("external") or {}).get("base_url", "")
    if (why := unreachable(base_url)) is not None:
        raise ServerError(
            f"engines/{engine}/external/base_url: {base_url}: {why}; an external endpoint must be running before "
            f"the sweep (specsweep does not start it): start it, or fix the URL"
        )
    source = (settings.get("external") or {}).get("server_log")
    source_path = Path(source).expanduser() if source else None
    offset = source_path.stat().st_size if source_path and source_path.exists() else 0
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield AttachedServer(source_path if source_path and source_path.exists() else None, offset)
    finally:
        with open(log_path, "wb") as log:
            if source_path and source_path.exists():
                with open(source_path, "rb") as handle:
                    handle.seek(offset)
                    shutil.copyfileobj(handle, log)
