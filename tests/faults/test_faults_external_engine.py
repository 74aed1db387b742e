"""An external endpoint that declares its engine (misuse): an SGLang server someone else runs is spoken to
natively, so its per-request speculation counts are recorded (plain /v1/completions carries none)."""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import BENCHMARK, REPO

from specsweep.engines import adapter
from specsweep.engines.base import EngineResources
from specsweep.measure.session import Session, SessionPaths, measure
from specsweep.plan.config import Configuration
from specsweep.plan.workload import Prompt

# The final /generate event's meta_info of SGLang 0.5.10 (tests/fixtures/sglang_meta_info.json cites the source).
META = {
    k: v
    for k, v in json.loads((REPO / "tests" / "fixtures" / "sglang_meta_info.json").read_text())["0.5.10"].items()
    if not k.startswith("_")
}


class _SGLang(BaseHTTPRequestHandler):
    """What an SGLang 0.5.10 server answers (sglang/srt/entrypoints/http_server.py): /health, /server_info,
    /flush_cache and a streamed /generate with cumulative text and meta_info; /v1/completions is not served here,
    so a session that falls back to it fails."""

    protocol_version = "HTTP/1.1"

    def _json(self, status: int, data: object) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._json(200, {})
        elif self.path == "/server_info":
            self._json(
                200,
                {
                    "version": "0.5.10",
                    "speculative_algorithm": "EAGLE",
                    "speculative_num_draft_tokens": 4,
                    "model_path": "/models/llama",
                },
            )
        else:
            self._json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/flush_cache":
            self._json(200, {})
            return
        if self.path != "/generate":
            self._json(404, {"detail": "Not Found"})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        total = META["completion_tokens"]
        for n in range(1, total + 1):
            meta = META if n == total else {"id": META["id"], "finish_reason": None, "completion_tokens": n}
            event = {"text": "x" * n, "output_ids": list(range(n)), "meta_info": meta}
            self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *_args) -> None:
        pass


@pytest.fixture
def sglang_endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SGLang)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_an_external_sglang_endpoint_records_its_speculation_counts(tmp_path, monkeypatch, sglang_endpoint):
    monkeypatch.setenv("SPECSWEEP_CACHE", str(tmp_path / "cache"))  # its own measuring lock
    settings = {
        "kind": "external",
        "host": "127.0.0.1",
        "port": 0,
        "external": {"base_url": sglang_endpoint, "engine": "sglang"},
    }
    engine = adapter("external", settings, EngineResources())
    assert engine.kind == "sglang" and not engine.launches
    configuration = Configuration(name="ext", engine="ext", kind="external", baseline=True, args={}, env={})
    out = tmp_path / "results" / "ext"
    paths = SessionPaths(
        log=out / "server.log",
        launch=out / "launch.json",
        runs=[out / "runs" / "run_0.json"],
        stale_pgid=out / "server.pgid",
        failed_root=out / "failed",
    )
    benchmark = {**BENCHMARK, "runs": 1, "warmup_requests": 0, "max_tokens": META["completion_tokens"]}
    measure(Session(configuration, engine, benchmark, [Prompt("hello")], "127.0.0.1", 0, paths), progress=io.StringIO())
    run = json.loads(paths.runs[0].read_text())
    assert run["speculation"]["source"] == "response meta_info (0.5.10 keys)"
    assert (run["speculation"]["drafted"], run["speculation"]["accepted"], run["speculation"]["verify_steps"]) == (
        META["spec_draft_token_num"],
        META["spec_accept_token_num"],
        META["spec_verify_ct"],
    )
    assert json.loads(paths.launch.read_text())["engine"]["version"] == "0.5.10"


def test_an_external_endpoint_without_a_declared_engine_is_plain_openai():
    engine = adapter("external", {"kind": "external", "external": {"base_url": "http://x"}}, EngineResources())
    assert engine.kind == "external" and engine.health_path == "/v1/models"
