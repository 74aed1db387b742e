"""What an engine answers that specsweep once misread: a /slots that answers 501 (llama-server --no-slots), and a
declared secret that a prompt also holds (launch.json's rendered first prompt)."""

from __future__ import annotations

import json

from conftest import results_of, run_session, session_spec


def test_no_slots_is_a_valid_llama_server_flag(tmp_path, standin, model_file, monkeypatch):
    """--no-slots makes /slots answer 501 with an error object: the readiness check indexed it (FAILED (0))."""
    spec = session_spec(tmp_path, standin, model_file, args={"--no-slots": True}, runs=1)
    error, progress = run_session(spec, monkeypatch)
    assert error is None, f"{error!r}\n{progress}"
    engine = json.loads((results_of(spec) / "launch.json").read_text())["engine"]
    assert "/slots answered 501" in engine["warning"] and engine["speculative"] is False
    assert "WARNING: /slots answered 501" in progress


def test_a_declared_secret_in_a_prompt_is_not_written_to_launch_json(tmp_path, standin, model_file, monkeypatch):
    monkeypatch.setenv("MYREF", "lighthouse")  # declared: redacted whatever its form, a prompt's word included
    spec = session_spec(
        tmp_path, standin, model_file, args={"--alias": {"from_env": "MYREF"}}, runs=1, chat_template=True
    )
    error, progress = run_session(spec, monkeypatch)
    assert error is None, f"{error!r}\n{progress}"
    text = (results_of(spec) / "launch.json").read_text()
    assert "lighthouse" not in text
    assert "<|user|>Write a short story about a <redacted> keeper." in json.loads(text)["chat_template"]["first_prompt"]
