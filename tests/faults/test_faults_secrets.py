"""Secrets never reach a message (misuse): a server that fails at start echoes its argv, secret flag values
included, into the log tail that becomes the exception, error.txt and the console."""

from __future__ import annotations

import json
import os

from conftest import failed_dirs, results_of, run_session, session_spec

from specsweep.redact import without_secrets
from specsweep.server import ServerError


def test_a_server_failing_at_start_does_not_carry_its_secrets_into_the_error(tmp_path, standin, model_file,
                                                                            monkeypatch):
    flag_secret, env_secret = "argsecret" + os.urandom(6).hex(), "envsecret" + os.urandom(6).hex()
    monkeypatch.setenv("SPECSWEEP_TEST_TOKEN", env_secret)
    spec = session_spec(tmp_path, standin, model_file, args={"--api-key": flag_secret},
                        env={"STANDIN_MODE": "exit-at-start"}, runs=1)
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
