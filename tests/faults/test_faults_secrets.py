"""Secrets never reach a message (misuse): a server that fails at start echoes its argv, secret flag values
included, into the log tail that becomes the exception, error.txt and the console."""

from __future__ import annotations

import json
import os
import traceback

from conftest import failed_dirs, results_of, run_session, session_spec

from specsweep.engines.server import ServerError
from specsweep.record.redact import without_secrets


def test_a_server_failing_at_start_does_not_carry_its_secrets_into_the_error(
    tmp_path, standin, model_file, monkeypatch
):
    flag_secret, env_secret = "argsecret" + os.urandom(6).hex(), "envsecret" + os.urandom(6).hex()
    monkeypatch.setenv("SPECSWEEP_TEST_TOKEN", env_secret)
    spec = session_spec(
        tmp_path, standin, model_file, args={"--api-key": flag_secret}, env={"STANDIN_MODE": "exit-at-start"}, runs=1
    )
    error, progress = run_session(spec, monkeypatch)
    assert isinstance(error, ServerError)
    assert "exited with status 1 before it was ready" in str(error) and "<redacted>" in str(error)
    assert error.__suppress_context__  # the original, unredacted exception is not printed with it
    [kept] = failed_dirs(spec)
    written = {p: p.read_bytes() for p in [*results_of(spec).rglob("*")] if p.is_file()}
    assert kept / "error.txt" in written
    for secret in (flag_secret, env_secret):
        assert secret not in str(error) and secret not in progress
        assert not [p for p, data in written.items() if secret.encode() in data]
    assert json.loads((results_of(spec) / "launch.json").read_text())["status"] == "failed"


def test_an_error_without_secrets_is_raised_unchanged():
    error = ServerError("the server exited with status 1")
    assert without_secrets(error, ["sk-abcdef"]) is error


def test_a_secret_in_a_chained_cause_is_redacted_too():
    try:
        try:
            raise ValueError("token sk-abcdef refused")
        except ValueError as cause:
            raise ServerError("start failed") from cause
    except ServerError as error:
        clean = without_secrets(error, ["sk-abcdef"])
    assert isinstance(clean, ServerError)
    assert "sk-abcdef" not in str(clean) and "ValueError: token <redacted> refused" in str(clean)


def test_a_server_that_requires_an_api_key_is_benchmarked_with_one_from_the_environment(
    tmp_path, standin, model_file, monkeypatch
):
    key = "sk-bench-" + os.urandom(8).hex()
    monkeypatch.setenv("MY_SERVER_AUTH", key)  # a name that does not look secret: hidden all the same
    spec = session_spec(tmp_path, standin, model_file, runs=2)
    spec["engine_settings"] = {"api_key_env": "MY_SERVER_AUTH"}
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    assert len(list((results_of(spec) / "runs").glob("run_*.json"))) == 2
    log = (results_of(spec) / "server.log").read_text()
    assert "401" not in log  # every request, readiness and /props, /slots, /metrics included, carried the key
    written = [p for p in results_of(spec).rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert written == [] and key not in progress
    env = json.loads((results_of(spec) / "launch.json").read_text())["env"]
    # The engine gets the key as the variable it reads (clean environment: not the caller's variable).
    assert env["LLAMA_API_KEY"] == "<redacted>" and "MY_SERVER_AUTH" not in env


def test_without_the_key_the_session_says_which_key_to_set(tmp_path, standin, model_file, monkeypatch):
    # The server requires a key (set for it alone: engines get a clean environment); no api_key_env.
    spec = session_spec(
        tmp_path, standin, model_file, env={"STANDIN_MODE": "", "LLAMA_API_KEY": "sk-only-the-server-knows"}, runs=1
    )
    error, _ = run_session(spec, monkeypatch)
    assert isinstance(error, RuntimeError)
    assert "the server requires an API key (/props answered 401); set engines/llama/api_key_env" in str(error)


def test_an_unset_api_key_variable_is_named_before_anything_starts(tmp_path, standin, model_file, monkeypatch):
    monkeypatch.delenv("MY_SERVER_AUTH", raising=False)
    spec = session_spec(tmp_path, standin, model_file, runs=1)
    spec["engine_settings"] = {"api_key_env": "MY_SERVER_AUTH"}
    error, _ = run_session(spec, monkeypatch)
    assert "engines/llama/api_key_env: the environment variable MY_SERVER_AUTH is not set" in str(error)
    assert not (results_of(spec) / "server.log").exists()


def test_a_redacted_error_keeps_where_it_failed():
    secret = "sk-" + os.urandom(6).hex()  # not in any source line the traceback shows
    try:
        raise ServerError(f"log tail: --api-key {secret}")
    except ServerError as error:
        clean = without_secrets(error, [secret])
    text = "".join(traceback.format_exception(clean))
    assert "in test_a_redacted_error_keeps_where_it_failed" in text and secret not in text
