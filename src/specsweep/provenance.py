"""Provenance: the record of how a number was made (code, machine, GPUs, software, config).

One format (``FORMAT``, documented in docs/provenance.md) at two scopes: ``results/<cfg>/provenance.json``
for one configuration's session and ``results/provenance.json`` for the sweep. The machine snapshot is
taken by the session just before the server starts (kept in launch.json) so that it describes the
machine as it was measured; GPU facts come from ``nvidia-smi`` when present. Parsers take captured text,
so the GPU part is testable without a GPU. Standard library only: it also runs on a bare GPU host.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from specsweep import __version__
from specsweep.cache import sha256_bytes
from specsweep.redact import redact_env, redact_mapping

FORMAT = "specsweep-provenance/1"
# Packages whose versions change results or their processing; engines' packages when installed here.
KEY_PACKAGES = ("specsweep", "snakemake", "pandas", "numpy", "scipy", "matplotlib", "seaborn", "requests",
                "psutil", "sglang", "vllm", "torch", "transformers", "flashinfer-python", "triton")
_TIMEOUT_S = 30


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run(argv: list[str], cwd: str | Path | None = None) -> str | None:
    """stdout of a command, or None when it is missing or fails (provenance never breaks a sweep)."""
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def git_state(path: str | Path | None = None) -> dict[str, Any] | None:
    """Commit and dirty flag of the git checkout holding ``path`` (default: this package's source)."""
    where = Path(path) if path else Path(__file__).resolve().parent
    commit = _run(["git", "-C", str(where), "rev-parse", "HEAD"])
    if commit is None:
        return None
    status = _run(["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"]) or ""
    changed = sorted(line[3:] for line in status.splitlines() if line.strip())
    return {"commit": commit.strip(), "dirty": bool(changed), "changed_files": changed}


def package_versions(names: tuple[str, ...] = KEY_PACKAGES) -> dict[str, str]:
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def _cpu_model(cpuinfo: str) -> str | None:
    for key in ("model name", "Hardware", "Processor", "cpu model"):
        if found := re.search(rf"^{key}\s*:\s*(.+)$", cpuinfo, flags=re.M):
            return found[1].strip()
    return platform.processor() or None


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def host() -> dict[str, Any]:
    """CPU, cores, memory, OS and kernel of this machine (Linux /proc; degrades elsewhere)."""
    cpuinfo = _read("/proc/cpuinfo")
    physical = {(m[0], m[1]) for m in re.findall(r"physical id\s*:\s*(\d+).*?core id\s*:\s*(\d+)", cpuinfo,
                                                 flags=re.S)}
    meminfo = re.search(r"^MemTotal:\s*(\d+) kB", _read("/proc/meminfo"), flags=re.M)
    try:
        os_name = platform.freedesktop_os_release().get("PRETTY_NAME")
    except OSError:
        os_name = None
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "hostname": socket.gethostname(),
        "cpu_model": _cpu_model(cpuinfo),
        "logical_cpus": os.cpu_count(),
        "physical_cores": len(physical) or None,
        "usable_cpus": usable,
        "memory_bytes": int(meminfo[1]) * 1024 if meminfo else None,
        "os": os_name or platform.system(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "cpu_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").strip() or None,
    }


_KEY_VALUE = re.compile(r"^(\S.*?)\s+:(?:\s(.*))?$")  # "Product Name      : NVIDIA H200"
_GPU_SECTION = re.compile(r"^GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+)$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_nvidia_smi_q(text: str) -> dict[str, Any]:
    """``nvidia-smi -q`` as a nested mapping: indentation gives sections, ``key : value`` the leaves.

    Top-level ``GPU <bus id>`` sections are collected under ``"gpus"`` (a list, in order); a key
    repeated within one section (e.g. one entry per process) becomes a list of its values.
    """
    root: dict[str, Any] = {}
    gpus: list[dict[str, Any]] = []
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("="):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if pair := _KEY_VALUE.match(line):
            _put(parent, pair[1], (pair[2] or "").strip())
            continue
        section: dict[str, Any] = {}
        if indent == 0 and (bus := _GPU_SECTION.match(line)):
            section["bus_id"] = bus[1]
            gpus.append(section)
        else:
            _put(parent, line.rstrip(":"), section)
        stack.append((indent, section))
    root["gpus"] = gpus
    return root


def _put(mapping: dict[str, Any], key: str, value: Any) -> None:
    if key not in mapping:
        mapping[key] = value
    elif isinstance(mapping[key], list):
        mapping[key].append(value)
    else:
        mapping[key] = [mapping[key], value]


def parse_topology(text: str) -> dict[str, Any]:
    """``nvidia-smi topo -m``: the device-by-device link matrix (X, NV18, SYS, PIX, ...) and CPU/NUMA affinity."""
    lines = [_ANSI.sub("", line) for line in text.splitlines() if line.strip()]
    if not lines:
        return {"matrix": {}, "affinity": {}}
    header = [h.strip() for h in lines[0].split("\t") if h.strip()]
    devices = [h for h in header if re.match(r"^(GPU|NIC)\d+$", h)]
    matrix: dict[str, dict[str, str]] = {}
    affinity: dict[str, dict[str, str]] = {}
    for line in lines[1:]:
        if line.strip().startswith("Legend"):
            break
        cells = [c.strip() for c in line.split("\t")]
        if not re.match(r"^(GPU|NIC)\d+$", cells[0]):
            continue
        links, rest = cells[1:1 + len(devices)], [c for c in cells[1 + len(devices):] if c]
        matrix[cells[0]] = dict(zip(devices, links, strict=False))
        if rest:  # nvidia-smi pads with empty cells: pair the non-empty ones with the remaining headings
            affinity[cells[0]] = dict(zip(header[len(devices):], rest, strict=False))
    return {"matrix": matrix, "affinity": affinity}


def gpus() -> dict[str, Any] | None:
    """GPU facts from nvidia-smi, or None when there is none (a CPU machine)."""
    if shutil.which("nvidia-smi") is None:
        return None
    query = _run(["nvidia-smi", "-q"])
    if query is None:
        return {"error": "nvidia-smi -q failed"}
    parsed = parse_nvidia_smi_q(query)
    topo = _run(["nvidia-smi", "topo", "-m"]) or ""
    devices = parsed.get("gpus", [])
    return {
        "driver_version": parsed.get("Driver Version"),
        "cuda_version": parsed.get("CUDA Version"),
        "count": len(devices),
        "models": [d.get("Product Name") for d in devices],
        "nvidia_smi_q": parsed,
        "topology": parse_topology(topo),
        "topology_text": topo,
    }


def machine(repo: str | Path | None = None) -> dict[str, Any]:
    """Everything about the code, software and hardware that a measurement depends on."""
    return {
        "captured_at": now_iso(),
        "specsweep": {"version": __version__, "git": git_state(repo)},
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation(),
                   "executable": sys.executable},
        "packages": package_versions(),
        "host": host(),
        "gpus": gpus(),
    }


def config_sha256(config: dict[str, Any]) -> str:
    """Hash of the validated config (defaults filled, secrets redacted), key order irrelevant."""
    canonical = json.dumps(redact_mapping(config), sort_keys=True, separators=(",", ":"), default=str)
    return sha256_bytes(canonical)


def configuration_record(launch: dict[str, Any], engine: dict[str, Any], models: dict[str, Any],
                         config_hash: str, captured_later: dict[str, Any] | None = None) -> dict[str, Any]:
    """One configuration's provenance from its launch record (which holds the machine at launch)."""
    machine_now = launch.get("machine")
    return {
        "format": FORMAT,
        "scope": "configuration",
        "name": launch.get("configuration", {}).get("name"),
        "config_sha256": config_hash,
        "configuration": launch.get("configuration"),
        "engine": {"record": engine, "reported": launch.get("engine")},
        "models": models,
        "argv": launch.get("argv"),
        "env": redact_env(launch.get("env", {})),
        "env_set": redact_env(launch.get("env_set", {})),
        "env_unset": launch.get("env_unset", []),
        # config, pass-through or default (environment.py); absent in launches before the clean environment
        "env_origin": launch.get("env_origin"),
        "started_at": launch.get("launched_at"),
        "ended_at": launch.get("stopped_at"),
        "status": launch.get("status"),
        "machine": machine_now or captured_later,
        "machine_captured": "at launch" if machine_now else "after the session (launch.json has no snapshot)",
    }


def sweep_record(config: dict[str, Any], configurations: dict[str, dict[str, Any]],
                 files: dict[str, dict[str, str]], current: dict[str, Any]) -> dict[str, Any]:
    """The sweep's provenance: config, each configuration in brief (its file and sha256), the machine now."""
    starts = [c["started_at"] for c in configurations.values() if c.get("started_at")]
    ends = [c["ended_at"] for c in configurations.values() if c.get("ended_at")]
    return {
        "format": FORMAT,
        "scope": "sweep",
        "config_sha256": config_sha256(config),
        "config": redact_mapping(config),
        "started_at": min(starts, default=None),
        "ended_at": max(ends, default=None),
        "configurations": {
            name: {**files[name], "started_at": record.get("started_at"), "ended_at": record.get("ended_at"),
                   "status": record.get("status"), "argv": record.get("argv"),
                   "engine_version": (record.get("engine", {}).get("reported") or {}).get("version")}
            for name, record in configurations.items()},
        "machine": current,
        "env": redact_env(dict(os.environ)),
    }
