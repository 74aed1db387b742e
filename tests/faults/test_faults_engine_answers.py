"""What an engine answers that specsweep once misread: a /slots that answers 501 (llama-server --no-slots), and a
declared secret that a prompt also holds (launch.json's rendered first prompt)."""

from __future__ import annotations

import json
import subprocess

from conftest import results_of, run_session, session_spec, spawn_driver


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


def _signal_server_during_run(spec, sig, monkeypatch):
    """Run the session; send ``sig`` to the server once its first run is under way; (error, progress, seconds)."""
    import os
    import threading
    import time

    def send_when_running(progress):
        while "run 1/" not in "".join(progress):
            time.sleep(0.05)
        time.sleep(0.5)
        pgid = json.loads((results_of(spec) / "server.pgid").read_text())["pgid"]
        sent.append(time.monotonic())
        os.killpg(pgid, sig)

    sent: list[float] = []
    import drive_session

    class Progress(list):
        def write(self, text):
            self.append(text)
            if len(self) == 1:
                threading.Thread(target=send_when_running, args=(self,), daemon=True).start()
            return len(text)

        def flush(self):
            pass

    monkeypatch.setenv("SPECSWEEP_CACHE", spec["cache"])
    progress = Progress()
    try:
        drive_session.drive(spec, progress)
    except Exception as error:
        return error, "".join(progress), time.monotonic() - sent[0]
    return None, "".join(progress), None


import signal  # noqa: E402

import pytest  # noqa: E402


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_engine_mid_run_says_the_server_stopped_at_once(
    tmp_path, standin, model_file, monkeypatch, sig
):
    """A server that stops listening on SIGTERM/SIGINT but keeps the in-flight stream open: the session waited the
    whole request_timeout_s and said 'timed out'."""
    spec = session_spec(
        tmp_path,
        standin,
        model_file,
        env={"STANDIN_MODE": "term-stops-listening,token-delay=0.05"},
        runs=2,
        max_tokens=400,
        request_timeout_s=60,
    )
    error, progress, after_s = _signal_server_during_run(spec, sig, monkeypatch)
    assert error is not None, progress
    assert "no longer accepts connections" in str(error) and "timed out" not in str(error), str(error)
    assert after_s < 10, after_s


def test_a_stream_kept_alive_by_comments_ends_at_run_timeout_s(tmp_path, standin, model_file):
    """request_timeout_s bounds each read: SSE comments every 0.2 s kept a stream going for ever."""
    spec = session_spec(
        tmp_path, standin, model_file, env={"STANDIN_MODE": "keep-alive"}, runs=1, request_timeout_s=2, run_timeout_s=3
    )
    driver = spawn_driver(spec, tmp_path)
    try:
        output, _ = driver.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        driver.kill()
        output, _ = driver.communicate()
        pytest.fail(f"the session was still streaming keep-alive comments after 60 s:\n{output[-2000:]}")
    assert driver.returncode != 0
    assert "no end of the stream after 3 s (benchmark/run_timeout_s" in output and "not counted" in output, output
