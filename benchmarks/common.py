"""Shared helpers of the benchmark scripts: child processes with their peak memory, a machine line.

Every timed piece runs in its own child process so that its peak resident memory (``ru_maxrss``
from ``wait4``) is its own and not the driver's.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable


@dataclass(frozen=True)
class ChildRun:
    wall_s: float
    peak_rss_mib: float
    stdout: str
    returncode: int


def snakemake_argv(workdir: Path, *args: str) -> list[str]:
    """The workflow run as a user runs it, in ``workdir`` with its config.yaml, on one core."""
    return [
        PYTHON,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(workdir / "config.yaml"),
        "--cores",
        "1",
        *args,
    ]


def run_child(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> ChildRun:
    """Run argv (no shell), wait with wait4 to read its own peak RSS; stdout is captured.

    Both pipes are read at once (stderr in a thread): read one after the other, a child that fills the
    other pipe (64 KiB) blocks for ever. Not communicate(): it reaps the child, and wait4 needs to.
    """
    started = time.perf_counter()
    with subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        errors: list[bytes] = []
        reader = threading.Thread(target=lambda: errors.append(process.stderr.read()))  # type: ignore[union-attr]
        reader.start()
        out = process.stdout.read()  # type: ignore[union-attr]
        reader.join()
        err = errors[0]
        _pid, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"{argv[:4]} failed ({process.returncode}):\n{(out + err).decode(errors='replace')[-3000:]}")
    # Linux reports ru_maxrss in KiB
    return ChildRun(wall, usage.ru_maxrss / 1024, out.decode(), process.returncode)


def child_json(argv: list[str], **kwargs) -> tuple[dict, ChildRun]:
    """A child that prints one JSON object as its last stdout line."""
    run = run_child(argv, **kwargs)
    return json.loads(run.stdout.strip().splitlines()[-1]), run


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory = next(
        (
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        ),
        0,
    )
    return (
        f"{os.cpu_count()} vCPU {cpu}, {memory / 2**20:.0f} GiB RAM, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}"
    )


def simulation_main(
    doc: str,
    default_sweeps: int,
    measure_all: Callable[[int], list[dict]],
    lines: Callable[[list[dict]], list[tuple[str, str, str]]],
) -> None:
    """The command line of a simulation benchmark: ``--sweeps``, its results as JSON, then its make bench rows."""
    import argparse

    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--sweeps", type=int, default=default_sweeps)
    results = measure_all(parser.parse_args().sweeps)
    print(json.dumps(results, indent=1))
    for name, figure, target in lines(results):
        print(f"{name:<84} {figure:>18} {target:>14}")
