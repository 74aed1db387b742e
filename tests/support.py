"""Helpers that the fault suite (tests/faults) and the cluster suite (tests/slurm) share: the stand-in
engine and its sweep config, the process-table walk, polling; the real engine of the engine tests; and
the session's quick ``scontrol``.

Their conftest files keep the fixtures and re-export these under the names tests import them by.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
STANDIN = REPO / "tests" / "standin_engine.py"


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
    """``condition()`` once it is true, polled every ``step_s`` for ``timeout_s``; else its last value."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(step_s)
    return condition()


def kill_all(processes: list[psutil.Process]) -> None:
    """SIGKILL each process's whole group (a test never leaves a mess behind, even when it fails)."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(os.getpgid(process.pid), signal.SIGKILL)


def kill_bench_job_after_run_0(workdir: Path, env: dict[str, str], timeout_s: float) -> tuple[int, str]:
    """``snakemake all`` in ``workdir``; once ``results/baseline/runs/run_0.json`` exists, SIGKILL its one bench
    job as the OOM killer does (during run 2); return Snakemake's exit status and console."""
    from workflow_runs import snakemake_argv

    out = workdir / "results" / "baseline"
    first = subprocess.Popen(
        snakemake_argv(workdir, "all"), env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        assert wait_for(lambda: (out / "runs" / "run_0.json").exists() or first.poll() is not None, timeout_s)
        jobs = [
            p for p in leftovers(workdir / ".snakemake" / "scripts") if "bench_configuration" in " ".join(p.cmdline())
        ]
        assert len(jobs) == 1, first.communicate(timeout=60)[0][-3000:] if first.poll() is not None else jobs
        os.kill(jobs[0].pid, signal.SIGKILL)
        said, _ = first.communicate(timeout=120)
    finally:
        first.kill()
    return first.wait(), said


def listed_names(line: str) -> set[str]:
    """The configurations a conclusion line lists after its colon (``a +34.8 %, b -12.5 %``; ``none``)."""
    listed = line.split(": ", 1)[1]
    return set() if listed == "none" else {item.split(" ")[0] for item in listed.split(", ")}


def executable_standin(folder: Path) -> Path:
    """An executable copy of the stand-in engine; its path tells our processes from anyone else's."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "standin-llama-server"
    exe.write_text(f"#!{sys.executable}\n" + STANDIN.read_text())
    exe.chmod(0o755)
    return exe


def standin_model(path: Path) -> Path:
    """A model file for the stand-in engine (which never reads it)."""
    path.write_bytes(b"GGUF stand-in")
    return path


def standin_config(
    executable: Path, model: Path, configurations: dict[str, Any], benchmark: dict[str, Any]
) -> dict[str, Any]:
    """A sweep config on the stand-in engine: engine ``llama``, model ``tiny``, the project's prompts."""
    return {
        "engines": {"llama": {"kind": "llamacpp", "model": "tiny", "executable": str(executable)}},
        "models": {"tiny": {"path": str(model)}},
        "benchmark": {"prompts": str(REPO / "config" / "prompts.txt"), **benchmark},
        "configurations": configurations,
    }


def failed_dirs_in(configuration_results: Path) -> list[Path]:
    """The ``failed/<time>/`` folders of one configuration's results folder."""
    root = configuration_results / "failed"
    return sorted(root.iterdir()) if root.exists() else []


def launch_json(configuration_results: Path) -> dict[str, Any]:
    return json.loads((configuration_results / "launch.json").read_text())


# Snakemake's Slurm executor plugin, loaded by every `snakemake` start, runs `scontrol show config` while
# defining its options: where Slurm's client is installed and no controller answers (this machine between
# cluster tests), that waits ~10 s before failing, and the plugin then uses its defaults. The suite starts
# Snakemake hundreds of times; the stand-in answers the same failure at once when no slurmctld runs on this
# host, and hands every other call (and every call while the test cluster is up) to the real scontrol.
QUICK_SCONTROL = """#!/bin/sh
if [ "$*" = "show config" ] && command -v pgrep >/dev/null && ! pgrep -x slurmctld >/dev/null; then
    echo "slurm_load_ctl_conf error: Unable to contact slurm controller (tests/support.py: none runs here)" >&2
    exit 1
fi
here=$(cd "$(dirname "$0")" && pwd)
rest=
IFS=:
for folder in $PATH; do [ "$folder" = "$here" ] || rest=${rest:+$rest:}$folder; done
unset IFS
PATH=$rest
export PATH
exec scontrol "$@"
"""


def quick_scontrol(folder: Path) -> Path:
    """Write the quick ``scontrol`` into ``folder``, to be put first on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "scontrol"
    exe.write_text(QUICK_SCONTROL)
    exe.chmod(0o755)
    return exe


@dataclass(frozen=True)
class RealEngine:
    """The llama-server and model of tests/data/config.yaml (the default config's pins, one shared cache)."""

    server: Path
    model: Path

    @staticmethod
    def _config() -> tuple[dict[str, Any], dict[str, Any]]:
        config = yaml.safe_load((REPO / "tests" / "data" / "config.yaml").read_text())
        return config["engines"]["llama"], config["models"]["smollm2-135m"]

    @classmethod
    def planned(cls) -> RealEngine:
        """Where they are, or will be once ``obtain`` has run (nothing is built or fetched)."""
        from specsweep.engines.llamacpp import LlamaCpp
        from specsweep.record.models import model_path

        engine, model = cls._config()
        return cls(Path(str(LlamaCpp.planned_executable(engine))), model_path(model))

    @classmethod
    def obtain(cls, progress: TextIO) -> RealEngine:
        """Built and fetched as the engine and model rules do, when the cache lacks them (~11 min the first
        time on 2 cores): a real-engine test never skips for want of them."""
        from specsweep.engines.llamacpp import LlamaCpp
        from specsweep.record import models

        engine, model = cls._config()
        record = LlamaCpp.engine_record("llama", engine, progress)
        return cls(Path(record["executable"]), Path(models.obtain("smollm2-135m", model, progress)["path"]))


# The stand-in's runs last ~30 ms, where one scheduling delay on a loaded machine is 10 % of the rate:
# its client/engine rate check gets a wide tolerance (a paused client is still far outside it).
STANDIN_RATE_TOLERANCE_PCT = 50
BENCHMARK: dict[str, Any] = {
    "runs": 3,
    "max_tokens": 16,
    "warmup_requests": 1,
    "warmup_max_tokens": 8,
    "temperature": 0,
    "ignore_eos": True,
    "seed": 42,
    "ready_timeout_s": 20,
    "request_timeout_s": 10,
    "stop_grace_s": 0.5,
    "rate_tolerance_pct": STANDIN_RATE_TOLERANCE_PCT,
}
