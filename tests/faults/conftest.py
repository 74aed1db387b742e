"""Shared pieces of the fault-injection suite: the stand-in engine, sessions, the process-table walk."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
STANDIN = REPO / "tests" / "standin_engine.py"
DRIVER = Path(__file__).with_name("drive_session.py")

BENCHMARK: dict[str, Any] = {
    "runs": 3, "max_tokens": 16, "warmup_requests": 1, "warmup_max_tokens": 8, "temperature": 0,
    "ignore_eos": True, "seed": 42, "ready_timeout_s": 20, "request_timeout_s": 10, "stop_grace_s": 0.5,
}


def leftovers(marker: str | Path) -> list[psutil.Process]:
    """Every live process whose command line mentions ``marker`` (walks the whole process table)."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        if process.pid == os.getpid() or process.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if str(marker) in " ".join(process.info["cmdline"] or []):
            found.append(process)
    return found


def wait_for(condition: Callable[[], Any], timeout_s: float, step_s: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(step_s)
    return condition()


def kill_all(processes: list[psutil.Process]) -> None:
    for process in processes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(os.getpgid(process.pid), signal.SIGKILL)


@pytest.fixture
def standin(tmp_path: Path) -> Path:
    """An executable copy of the stand-in engine, named per test so the process walk finds only ours."""
    folder = tmp_path / "bin"
    folder.mkdir()
    exe = folder / "standin-llama-server"
    exe.write_text(f"#!{sys.executable}\n" + STANDIN.read_text())
    exe.chmod(0o755)
    yield exe
    left = leftovers(exe)
    kill_all(left)  # never leave a mess behind, even when a test fails
    assert not left, f"stand-in processes left behind: {[p.pid for p in left]}"


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF stand-in")
    return path


def session_spec(root: Path, executable: Path, model: Path, *, env: dict[str, str] | None = None,
                 args: dict[str, Any] | None = None, port: int = 0, **benchmark: Any) -> dict[str, Any]:
    """Everything ``drive_session.py`` (or ``run_session``) needs to run one configuration's session."""
    return {
        "configuration": {"name": "cfg", "engine": "llama", "kind": "llamacpp", "baseline": True,
                          "args": args or {}, "env": env or {}},
        "executable": str(executable), "model": str(model), "host": "127.0.0.1", "port": port,
        "benchmark": {**BENCHMARK, **benchmark}, "results": str(root / "results" / "cfg"),
        "cache": str(root / "cache"),
    }


# When the last run_session launched its server (monotonic), so tests can time failures without the lock wait.
TIMES: dict[str, float] = {}


def run_session(spec: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[BaseException | None, str]:
    """Run a session in this process; return the exception it raised (or None) and its progress text."""
    sys.path.insert(0, str(DRIVER.parent))
    try:
        import drive_session
    finally:
        sys.path.pop(0)
    monkeypatch.setenv("SPECSWEEP_CACHE", spec["cache"])

    class Progress(list):
        def write(self, text: str) -> int:
            if ": launching " in text:
                TIMES["launching"] = time.monotonic()  # after the wait for the machine-wide lock
            self.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    progress = Progress()
    try:
        drive_session.drive(spec, progress)
    except BaseException as error:
        return error, "".join(progress)
    return None, "".join(progress)


def spawn_driver(spec: dict[str, Any], tmp_path: Path) -> subprocess.Popen[str]:
    """Run a session in a child process, standing in for Snakemake's job script."""
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {**os.environ, "SPECSWEEP_CACHE": spec["cache"]}
    return subprocess.Popen([sys.executable, str(DRIVER), str(spec_path)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def results_of(spec: dict[str, Any]) -> Path:
    return Path(spec["results"])


def failed_dirs(spec: dict[str, Any]) -> list[Path]:
    root = results_of(spec) / "failed"
    return sorted(root.iterdir()) if root.exists() else []


def launch_status(spec: dict[str, Any]) -> str | None:
    try:
        return json.loads((results_of(spec) / "launch.json").read_text()).get("status")
    except (FileNotFoundError, ValueError):
        return None
