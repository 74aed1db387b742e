"""Shared pieces of the fault-injection suite: the stand-in engine, sessions, the process-table walk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from support import (  # noqa: F401 (the fault tests import REPO, wait_for and BENCHMARK from here)
    BENCHMARK,
    REPO,
    STANDIN_RATE_TOLERANCE_PCT,
    executable_standin,
    failed_dirs_in,
    kill_all,
    leftovers,
    standin_config,
    standin_model,
    wait_for,
)
from workflow_runs import snakemake as run_snakemake

DRIVER = Path(__file__).with_name("drive_session.py")


@pytest.fixture
def standin(tmp_path: Path) -> Path:
    """An executable copy of the stand-in engine, named per test so the process walk finds only ours."""
    exe = executable_standin(tmp_path / "bin")
    yield exe
    left = leftovers(exe)
    kill_all(left)  # never leave a mess behind, even when a test fails
    assert not left, f"stand-in processes left behind: {[p.pid for p in left]}"


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    return standin_model(tmp_path / "model.gguf")


def session_spec(
    root: Path,
    executable: Path,
    model: Path,
    *,
    env: dict[str, str] | None = None,
    args: dict[str, Any] | None = None,
    port: int = 0,
    **benchmark: Any,
) -> dict[str, Any]:
    """Everything ``drive_session.py`` (or ``run_session``) needs to run one configuration's session."""
    return {
        "configuration": {
            "name": "cfg",
            "engine": "llama",
            "kind": "llamacpp",
            "baseline": True,
            "args": args or {},
            "env": env or {},
        },
        "executable": str(executable),
        "model": str(model),
        "host": "127.0.0.1",
        "port": port,
        "benchmark": {**BENCHMARK, **benchmark},
        "results": str(root / "results" / "cfg"),
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
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(spec_path)],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def results_of(spec: dict[str, Any]) -> Path:
    return Path(spec["results"])


def failed_dirs(spec: dict[str, Any]) -> list[Path]:
    return failed_dirs_in(results_of(spec))


def launch_status(spec: dict[str, Any]) -> str | None:
    try:
        return json.loads((results_of(spec) / "launch.json").read_text()).get("status")
    except (FileNotFoundError, ValueError):
        return None


# Snakemake with the stand-in engine: a config in a temporary working directory, run as a user would.


def write_config(workdir: Path, standin: Path, model: Path, configurations: dict[str, Any], **benchmark: Any) -> None:
    benchmark = {
        "runs": 3,
        "max_tokens": 16,
        "warmup_max_tokens": 4,
        "stop_grace_s": 0.5,
        "request_timeout_s": 20,
        "rate_tolerance_pct": STANDIN_RATE_TOLERANCE_PCT,
        **benchmark,
    }
    config = standin_config(standin, model, configurations, benchmark)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def snakemake(workdir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # Its own cache, so its own measuring lock: the stand-in does not load the machine.
    env = {**os.environ, **(env or {}), "SPECSWEEP_CACHE": str(workdir / "cache")}
    return run_snakemake(workdir, *args, env=env, timeout=600)


def nothing_to_redo_then_packed(workdir: Path) -> list[str]:
    """A finished sweep's dry rerun has nothing to do (resumable: nothing measured or decided again); then its
    archive is packed: the packed members' names."""
    again = snakemake(workdir, "-n", "all")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stdout[-2000:]
    packed = snakemake(workdir, "archive_pack")
    assert packed.returncode == 0, packed.stderr[-3000:]
    (archive,) = (workdir / "results" / "archive").glob("*.tar.gz")
    with tarfile.open(archive) as packed_files:
        return packed_files.getnames()


class Sweep:
    """One tiny stand-in sweep shared by every check that only reads its outputs (Snakemake runs cost
    tens of seconds each on a small machine). Its life, each step recorded for the tests to check:

    1. ``keep-going``: ``--keep-going all`` while configuration ``dies`` SIGKILLs its engine in run 2/3;
    2. ``dry-run``: ``-n all`` (what a rerun would do); 3. ``rerun``: ``all`` once the fault is gone;
    4. ``plan``: ``results/commands.sh``; 5. ``archive``.
    Configuration ``hostile`` carries shell metacharacters in its flag values, and secrets are planted
    in the environment, in config ``env:`` and as a secret flag's value (see test_faults_security).
    """

    def __init__(self, workdir: Path, secrets: dict[str, str], configurations: dict[str, Any]) -> None:
        self.workdir = workdir
        self.standin = executable_standin(workdir / "bin")
        model = standin_model(workdir / "model.gguf")
        fault = workdir / "fault-on"
        fault.touch()
        configurations = {
            **configurations,
            "dies": {"env": {"STANDIN_MODE": "die-during=3", "STANDIN_ONLY_IF": str(fault)}},
        }
        write_config(workdir, self.standin, model, configurations)
        # The planted environment secrets are passed through to the engine (which otherwise gets a clean
        # environment), so that their redaction in launch.json and the logs is checked.
        config = yaml.safe_load((workdir / "config.yaml").read_text())
        config["environment"] = {"pass_through": sorted(secrets)}
        (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        self.steps: dict[str, subprocess.CompletedProcess[str]] = {}
        self.left: dict[str, list[int]] = {}  # engine processes alive after each step
        self.step("keep-going", "--keep-going", "all", env=secrets)
        self.summary_after_failure = pd.read_csv(workdir / "results" / "summary.csv")
        self.runs_after_failure = (workdir / "results" / "dies" / "runs").exists()
        self.step("dry-run", "-n", "all", env=secrets)
        fault.unlink()  # the fault is gone: the rerun measures just that configuration
        for name, target in [("rerun", "all"), ("plan", "results/commands.sh"), ("archive", "archive")]:
            self.step(name, target, env=secrets)

    def step(self, name: str, *args: str, env: dict[str, str]) -> None:
        self.steps[name] = snakemake(self.workdir, *args, env=env)
        self.left[name] = [p.pid for p in leftovers(self.standin)]
        kill_all(leftovers(self.standin))

    @property
    def results(self) -> Path:
        return self.workdir / "results"


SWEEP_SECRETS = {
    "env": "envsecret" + os.urandom(6).hex(),
    "config": "cfgsecret" + os.urandom(6).hex(),
    "arg": "argsecret" + os.urandom(6).hex(),
}
PWNED = [Path(f"/tmp/pwned-{os.urandom(6).hex()}-{i}") for i in range(4)]
HOSTILE_ARGS = {  # each value must reach the engine as one argv element, byte for byte, and never run
    "--alias": f"x; touch {PWNED[0]}",
    "--chat-template": f"$(touch {PWNED[1]})",
    "--system-prompt": f"`touch {PWNED[2]}` && touch {PWNED[3]} | 'quote\" \\ {{x}} *",
}


@pytest.fixture(scope="session")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    secrets = {"SPECSWEEP_FAULT_TOKEN": SWEEP_SECRETS["env"], "HF_HUB_TOKEN": SWEEP_SECRETS["env"]}
    return Sweep(
        tmp_path_factory.mktemp("sweep"),
        secrets,
        {
            "baseline": {"baseline": True, "env": {"HF_TOKEN": SWEEP_SECRETS["config"]}},
            "hostile": {
                "args": {**HOSTILE_ARGS, "--hf-token": SWEEP_SECRETS["arg"]},
                "env": {"MY_API_KEY": SWEEP_SECRETS["config"]},
            },
        },
    )
