"""Inputs that used to cost the whole readiness timeout or a misleading message (misuse): each is recognised
at once and named - a FIFO or device as the model, a directory or binary file as prompts, an external
endpoint that answers 404 or an HTML page."""

from __future__ import annotations

import copy
import io
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import BENCHMARK, REPO

from specsweep.engines.base import EngineResources
from specsweep.engines.external import External
from specsweep.engines.server import ServerError
from specsweep.measure.session import Session, SessionPaths, measure
from specsweep.plan.config import ConfigError, Configuration, validate_schema
from specsweep.plan.preflight import check_files
from specsweep.plan.workload import Prompt, read_workload


def _check(config: dict) -> str:
    with pytest.raises(ConfigError) as error:
        check_files(validate_schema(config))
    return str(error.value)


def test_a_fifo_as_the_model_is_refused_at_once(default_config, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    config = copy.deepcopy(default_config)
    config["models"]["smollm2-135m"] = {"path": str(fifo)}
    assert f"models/smollm2-135m/path: {fifo} is a FIFO (named pipe), not a model file" in _check(config)


def test_a_device_as_the_model_is_refused_at_once(default_config, monkeypatch):
    monkeypatch.chdir(REPO)
    config = copy.deepcopy(default_config)
    config["models"]["smollm2-135m"] = {"path": "/dev/zero"}
    assert "models/smollm2-135m/path: /dev/zero is a character device, not a model file" in _check(config)


def test_a_directory_as_prompts_is_not_called_missing(default_config, tmp_path):
    config = copy.deepcopy(default_config)
    config["benchmark"]["prompts"] = str(tmp_path)
    message = _check(config)
    assert f"benchmark/prompts: {tmp_path} is a directory, not a file" in message and "does not exist" not in message


@pytest.mark.parametrize(
    ("content", "why"),
    [(b"GGUF\x03\x00\x00\x00binary", "NUL byte at offset 5"), (b"caf\xe9 au lait\n", "byte 3 is not UTF-8")],
)
def test_a_binary_prompts_file_is_named(default_config, tmp_path, content, why):
    prompts = tmp_path / "prompts.bin"
    prompts.write_bytes(content)
    config = copy.deepcopy(default_config)
    config["benchmark"]["prompts"] = str(prompts)
    assert f"benchmark/prompts: {prompts} is not a UTF-8 text file: " in _check(config)
    assert why in _check(config)
    with pytest.raises(ValueError, match=f"{prompts}: not a UTF-8 text file: .*{why}"):
        read_workload(prompts)


class _Page(BaseHTTPRequestHandler):
    status, content_type, body = 404, "text/html", b"<html><body>Not Found</body></html>"

    def do_GET(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *_args) -> None:
        pass


@pytest.mark.parametrize(
    ("status", "body"), [(404, b'{"detail": "Not Found"}'), (200, b"<!doctype html><title>Welcome to nginx!</title>")]
)
def test_an_external_endpoint_that_is_not_an_openai_server_fails_at_once(tmp_path, monkeypatch, status, body):
    monkeypatch.setenv("SPECSWEEP_CACHE", str(tmp_path / "cache"))  # its own measuring lock
    _Page.status, _Page.body = status, body
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    engine = External({"kind": "external", "external": {"base_url": url}}, EngineResources())
    configuration = Configuration(name="ext", engine="ext", kind="external", baseline=True, args={}, env={})
    out = tmp_path / "results" / "ext"
    paths = SessionPaths(
        log=out / "server.log",
        launch=out / "launch.json",
        runs=[out / "runs" / "run_0.json"],
        stale_pgid=out / "server.pgid",
        failed_root=out / "failed",
    )
    started = time.monotonic()
    try:
        with pytest.raises(ServerError) as error:
            measure(
                Session(
                    configuration, engine, {**BENCHMARK, "ready_timeout_s": 60}, [Prompt("hi")], "127.0.0.1", 0, paths
                ),
                progress=io.StringIO(),
            )
    finally:
        server.shutdown()
    assert time.monotonic() - started < 10  # not the 60 s readiness timeout
    assert f"{url}/v1/models answered {status}" in str(error.value)
    assert "not an OpenAI model list" in str(error.value) and "external/base_url" in str(error.value)


def test_an_external_endpoint_still_starting_is_waited_for():
    _Page.status, _Page.body = 503, b"loading"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        engine = External({"kind": "external", "external": {"base_url": "x"}}, EngineResources())
        assert engine.is_ready(f"http://127.0.0.1:{server.server_address[1]}") is False
    finally:
        server.shutdown()
