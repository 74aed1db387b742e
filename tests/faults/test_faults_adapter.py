"""The adapter owns what it sets (misuse): the model, host and port flags (and their aliases) are refused in
args before anything starts, naming the key to use; what the server really loaded is checked against the
configured model, and a mismatch stops the session."""

from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from conftest import run_session, session_spec, snakemake, write_config

from specsweep.engines.base import EngineResources
from specsweep.engines.llamacpp import LlamaCpp
from specsweep.engines.sglang import SGLang
from specsweep.engines.vllm import VLLM
from specsweep.plan.config import ConfigError, Configuration, expand, validate_schema
from specsweep.plan.preflight import check_configurations


def _configuration(kind: str, args: dict | None = None, env: dict | None = None) -> Configuration:
    return Configuration(name="cfg", engine="eng", kind=kind, baseline=True, args=args or {}, env=env or {})


@pytest.mark.parametrize(
    ("kind", "flag", "key"),
    [
        ("llamacpp", "-m", "model"),
        ("llamacpp", "--model", "model"),
        ("llamacpp", "-hf", "model"),
        ("llamacpp", "--hf-repo", "model"),
        ("llamacpp", "-mu", "model"),
        ("llamacpp", "--host", "host"),
        ("llamacpp", "--port", "port"),
        ("sglang", "--model-path", "model"),
        ("sglang", "--model", "model"),
        ("sglang", "--host", "host"),
        ("sglang", "--hos", "host"),
        ("sglang", "--port", "port"),
        ("vllm", "--model", "model"),
        ("vllm", "--host", "host"),
        ("vllm", "--port", "port"),
        ("vllm", "--uds", "host"),
    ],
)
def test_a_flag_the_adapter_sets_is_refused_in_args_naming_the_key(kind, flag, key):
    with pytest.raises(ConfigError) as error:
        check_configurations({"cfg": _configuration(kind, {flag: "x"})})
    assert f"args sets {flag}, which the {kind} adapter sets itself from engines/eng/{key}" in str(error.value)
    assert f"set engines/eng/{key} instead" in str(error.value)


def test_the_engine_variables_that_name_model_host_or_port_are_refused_too():
    with pytest.raises(ConfigError, match="env sets LLAMA_ARG_HOST, which the llamacpp adapter sets itself"):
        check_configurations({"cfg": _configuration("llamacpp", env={"LLAMA_ARG_HOST": "0.0.0.0"})})


def test_flags_that_only_start_like_an_owned_one_pass():
    for kind, args in [
        ("llamacpp", {"--model-draft": "d.gguf", "-md": "d.gguf", "--metrics": True}),
        ("sglang", {"--model-impl": "sglang", "--speculative-draft-model-path": "d"}),
        ("vllm", {"--model-impl": "auto", "--max-model-len": 4096}),
    ]:
        check_configurations({"cfg": _configuration(kind, args)})


def test_host_in_engine_args_cannot_bypass_the_exposure_warning(default_config):
    config = copy.deepcopy(default_config)
    config["engines"]["llama"]["args"]["--host"] = "0.0.0.0"
    with pytest.raises(ConfigError, match=r"configurations/baseline: args sets --host.*engines/llama/host"):
        check_configurations(expand(validate_schema(config)))


@pytest.mark.parametrize("adapter", [LlamaCpp, SGLang, VLLM])
def test_every_launching_adapter_owns_model_host_and_port(adapter):
    assert {"model", "host", "port"} <= set(adapter.owned_flags.values())


def test_a_server_that_loaded_another_model_stops_the_session(tmp_path, standin, model_file, monkeypatch):
    # Past the config check (a session driven directly): the server's own /props says what it loaded.
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF other")
    error, _ = run_session(session_spec(tmp_path, standin, model_file, args={"-m": str(other)}, runs=1), monkeypatch)
    assert isinstance(error, RuntimeError)
    assert f"the server loaded '{other}' (/props model_path), not the configured model '{model_file}'" in str(error)
    assert not (tmp_path / "results" / "cfg" / "runs" / "run_0.json").exists()


def test_provenance_records_the_model_the_server_loaded(tmp_path, standin, model_file, monkeypatch):
    error, progress = run_session(session_spec(tmp_path, standin, model_file, runs=1), monkeypatch)
    assert error is None, progress
    launch = json.loads((tmp_path / "results" / "cfg" / "launch.json").read_text())
    assert launch["engine"]["model_path"] == str(model_file)


class _Answers(BaseHTTPRequestHandler):
    """GET answers by path (JSON), 404 elsewhere."""

    answers: ClassVar[dict[str, Any]] = {}

    def do_GET(self) -> None:
        answer = self.answers.get(self.path)
        body = json.dumps(answer).encode() if answer is not None else b""
        self.send_response(200 if answer is not None else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args) -> None:
        pass


@pytest.fixture
def answering():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_sglang_server_info_model_path_must_be_the_configured_model(answering):
    # sglang/srt/entrypoints/http_server.py: /server_info = asdict(server_args) + ..., model_path among them
    engine = SGLang({"kind": "sglang"}, EngineResources(model="/models/llama-8b"))
    _Answers.answers = {
        "/server_info": {"version": "0.5.10", "model_path": "/models/other", "speculative_algorithm": None}
    }
    with pytest.raises(RuntimeError, match="loaded '/models/other' \\(/server_info model_path\\), not the configured"):
        engine.check_started(answering, _configuration("sglang"))
    _Answers.answers["/server_info"]["model_path"] = "/models/llama-8b"
    assert engine.check_started(answering, _configuration("sglang"))["model_path"] == "/models/llama-8b"


def test_vllm_model_root_must_be_the_configured_model(answering):
    # vllm/entrypoints/openai/serving_models.py: ModelCard(id=served name, root=model path)
    engine = VLLM({"kind": "vllm"}, EngineResources(model="meta-llama/Llama-3.1-8B"))
    _Answers.answers = {
        "/v1/models": {
            "object": "list",
            "data": [{"id": "meta-llama/Llama-3.1-8B", "object": "model", "root": "Qwen/Qwen3-8B"}],
        }
    }
    with pytest.raises(RuntimeError, match="loaded 'Qwen/Qwen3-8B' \\(/v1/models root\\)"):
        engine.check_started(answering, _configuration("vllm"))
    _Answers.answers["/v1/models"]["data"][0]["root"] = "meta-llama/Llama-3.1-8B"
    assert engine.check_started(answering, _configuration("vllm"))["model_path"] == "meta-llama/Llama-3.1-8B"


def test_snakemake_refuses_an_owned_flag_before_anything_starts(tmp_path, standin, model_file):
    write_config(tmp_path, standin, model_file, {"baseline": {"baseline": True, "args": {"--port": 8080}}})
    done = snakemake(tmp_path, "-n", "all")
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert (
        "configuration error: configurations/baseline: args sets --port, which the llamacpp adapter sets "
        "itself from engines/llama/port" in said
    ), said[-2000:]
    assert not (tmp_path / "results").exists()
