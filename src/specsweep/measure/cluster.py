"""What a measuring job asks a cluster scheduler for (Snakemake resources, read by the Slurm executor).

Locally these resources change nothing: measuring jobs are kept apart by the ``measuring`` resource
and the node-local lock. On Slurm each measuring job asks for its engine's GPUs, CPU cores, memory,
a time limit derived from the benchmark's own timeouts, and (by default) the whole node, because a
second tenant on the node distorts what is measured.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

from specsweep.plan.load_levels import RAMP_UP, levels_of
from specsweep.plan.rate_search import rate_search_of

# Minutes added to the estimate for Python start-up, imports and teardown of the job itself.
RUNTIME_MARGIN_MIN = 5


def session_runtime_min(benchmark: dict[str, Any]) -> int:
    """A time limit (whole minutes) that a session within its own timeouts never reaches.

    The worst case the session itself allows: the readiness timeout, every request (warmups and the
    most runs it may make) using its whole request timeout, the escalating stop (TERM, TERM, KILL)
    and the wait for GPU memory to be released; plus a margin for the job around the session.
    """
    adaptive = benchmark.get("adaptive") or {}
    runs = max(int(benchmark["runs"]), int(adaptive.get("max_runs", 0)))
    requests = int(benchmark["warmup_requests"]) + runs
    seconds = (
        float(benchmark["ready_timeout_s"])
        + requests * float(benchmark["request_timeout_s"])
        + 3 * float(benchmark["stop_grace_s"])
        + float(benchmark.get("gpu_release_timeout_s", 0))
        + _load_s(benchmark)
    )
    return math.ceil(seconds / 60) + RUNTIME_MARGIN_MIN


def _load_s(benchmark: dict[str, Any]) -> float:
    """The load windows' worst case: a closed-loop window's requests in ceil(n / concurrency) waves, an open-loop
    one's arrivals over n / rate seconds (a ramp's over its mean gaps) and then the last request, each request
    its whole request timeout;
    the rate search's probes (and their warmup windows) as open-loop windows at its lowest rate."""
    load = benchmark.get("load") or {}
    n, timeout_s = int(load.get("requests_per_window", 16)), float(benchmark["request_timeout_s"])
    windows = int(load.get("windows", 3)) + (1 if load.get("warmup", True) else 0)
    per_window = [math.ceil(n / int(c)) * timeout_s for c in load.get("concurrency") or []]
    per_window += [n / float(r) + timeout_s for r in load.get("request_rate") or []]
    ramps = [level for level in levels_of(benchmark) if level.kind == RAMP_UP]
    per_window += [sum(1 / rate for rate in level.rates(n)[1:]) + timeout_s for level in ramps]
    search = rate_search_of(benchmark)  # each probe an open-loop window, the slowest schedule at low
    probes = search.probes * (2 if load.get("warmup", True) else 1) * (n / search.low + timeout_s) if search else 0.0
    return windows * sum(per_window) + probes


def engine_cpus(engine: dict[str, Any], default: int) -> int:
    """CPU cores an engine's server uses: llama.cpp's ``-t``/``--threads`` when set, else ``default``."""
    args = engine.get("args") or {}
    for flag in ("-t", "--threads"):
        if isinstance(args.get(flag), int) and args[flag] > 0:
            return int(args[flag])
    return default


def measuring_resources(engine: dict[str, Any], benchmark: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
    """Snakemake resources of one measuring job (the Slurm executor turns them into sbatch flags).

    ``gpu`` (``--gpus``) is ``engines/<e>/gpus``: a count, or the length of a list (0: a CPU engine);
    ``cpus_per_task``, ``mem_mb`` and ``runtime`` come from ``cluster`` or are estimated;
    ``slurm_extra``: ``--no-requeue`` (a node failure is reported to Snakemake as NODE_FAIL instead of
    Slurm starting the job again behind its back while the first session may still run, claim.py), and
    ``--exclusive`` unless ``cluster.exclusive`` is false.
    """
    gpus = engine.get("gpus")
    resources: dict[str, Any] = {
        "gpu": gpus if isinstance(gpus, int) else len(gpus or []),
        "cpus_per_task": engine_cpus(engine, int(cluster["cpus_per_task"])),
        "mem_mb": int(cluster["mem_mb"]),
        "runtime": int(cluster.get("runtime_min") or session_runtime_min(benchmark)),
        "slurm_extra": "--no-requeue" + (" --exclusive" if cluster["exclusive"] else ""),
    }
    return resources


# The one-off engine build: compiling llama.cpp takes minutes per core (about 11 min on 2).
BUILD_RUNTIME_MIN = 120


def build_resources(engine: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
    """Resources of an engine build job: CPU cores and memory as a measuring job; one GPU only when a
    CUDA build must detect the GPU architecture itself (no ``cuda_architectures``)."""
    llamacpp = engine.get("llamacpp") or {}
    detects_gpu = (
        llamacpp.get("variant") == "cuda" and not llamacpp.get("cuda_architectures") and not engine.get("executable")
    )
    return {
        "gpu": 1 if detects_gpu else 0,
        "cpus_per_task": int(cluster["cpus_per_task"]),
        "mem_mb": int(cluster["mem_mb"]),
        "runtime": BUILD_RUNTIME_MIN,
    }


def job_log_lines(folder: str | Path, since: float, marker: str) -> list[str]:
    """Lines holding ``marker`` in the job logs under ``folder`` written since ``since`` (a time.time()),
    each once: what a job that failed before its rule's own log existed said on its node."""
    found: dict[str, None] = {}
    for log in sorted(Path(folder).rglob("*.log")) if Path(folder).is_dir() else []:
        if log.stat().st_mtime >= since:
            found.update(
                dict.fromkeys(line.strip() for line in log.read_text(errors="replace").splitlines() if marker in line)
            )
    return list(found)


# Slurm job states (squeue %T) of a job that no longer runs; UNKNOWN: Slurm has forgotten the job.
JOB_ENDED = frozenset(
    {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}
    | {"TIMEOUT", "UNKNOWN"}
)


def _slurm(*argv: str) -> subprocess.CompletedProcess[str] | None:
    """A Slurm command's result, or None where Slurm's commands are not installed or do not answer."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None


def job_state(job: str) -> tuple[str, str] | None:
    """``(state, node)`` of a Slurm job (``("UNKNOWN", "")`` once Slurm has forgotten it), or None when
    there is no Slurm to ask."""
    done = _slurm("squeue", "-h", "-t", "all", "-j", str(job), "-o", "%T %N")
    if done is None:
        return None
    if done.returncode != 0 or not done.stdout.strip():
        # "Invalid job id specified": gone past MinJobAge; any other error: no controller to ask
        return ("UNKNOWN", "") if "Invalid job id" in done.stderr or done.returncode == 0 else None
    state, _, node = done.stdout.strip().splitlines()[0].partition(" ")
    return state, node.strip()


def node_state(node: str) -> str | None:
    """A node's state and the reason it was set (e.g. ``down* (test node loss)``), or None when unknown."""
    done = _slurm("sinfo", "-h", "-N", "-n", node, "-o", "%T|%E")
    if done is None or done.returncode != 0 or not done.stdout.strip():
        return None
    state, _, reason = done.stdout.strip().splitlines()[0].partition("|")
    return f"{state} ({reason})" if reason and reason != "none" else state


def node_failed(state: str) -> bool:
    """Slurm considers the node lost: down, failing, or not responding (``*``)."""
    word = state.split()[0]
    return word.startswith(("down", "fail")) or word.endswith("*")


def same_node_as(
    configurations: dict[str, Any], baselines: dict[str, str | None], end_of: dict[str, str]
) -> dict[str, str]:
    """``cluster.same_node``: configuration -> the configuration whose node it must be measured on: its
    baseline (a bracket's ``<baseline>-end``: the baseline it closes); baselines themselves go anywhere."""
    pinned = {name: baseline for name, baseline in baselines.items() if baseline}
    pinned.update({name: baseline for name, baseline in end_of.items() if name in configurations})
    return pinned


def nodelist_flag(launch_json: str | Path | None) -> str:
    """``--nodelist=<node>`` of the node a launch record was measured on ('' when unknown or not yet measured)."""
    import json

    try:
        where = json.loads(Path(launch_json).read_text()).get("placement") or {} if launch_json else {}
    except (OSError, ValueError):
        return ""
    node = where.get("slurm_node") or where.get("host")
    return f"--nodelist={node}" if node else ""
