"""Machine facts a measurement depends on: code version (git), Python and packages, host, GPUs.

GPU facts come from ``nvidia-smi`` when present; its parsers take captured text, so they are testable
without a GPU. Standard library only: it also runs on a bare GPU host.
"""

from __future__ import annotations

import importlib.metadata
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
from specsweep.record.clock import now_iso

# Packages whose versions change results or their processing (engines add theirs: Engine.packages).
CORE_PACKAGES = (
    "specsweep",
    "snakemake",
    "pandas",
    "numpy",
    "scipy",
    "matplotlib",
    "seaborn",
    "requests",
    "psutil",
    "nvidia-ml-py",
)
_TIMEOUT_S = 30


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


def package_versions(names: tuple[str, ...]) -> dict[str, str]:
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
    physical = {(m[0], m[1]) for m in re.findall(r"physical id\s*:\s*(\d+).*?core id\s*:\s*(\d+)", cpuinfo, flags=re.S)}
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
        links, rest = cells[1 : 1 + len(devices)], [c for c in cells[1 + len(devices) :] if c]
        matrix[cells[0]] = dict(zip(devices, links, strict=False))
        if rest:  # nvidia-smi pads with empty cells: pair the non-empty ones with the remaining headings
            affinity[cells[0]] = dict(zip(header[len(devices) :], rest, strict=False))
    return {"matrix": matrix, "affinity": affinity}


def gpu_settings(parsed: dict[str, Any]) -> list[dict[str, Any]]:
    """What sets a GPU's speed and power, per GPU of parsed ``nvidia-smi -q``: power limit (current and default),
    application clocks (current and default) and persistence mode; None where the driver reports none."""
    settings = []
    for index, device in enumerate(parsed.get("gpus", [])):
        # "GPU Power Readings" since driver 530, "Power Readings" (with "Power Limit") before
        power = device.get("GPU Power Readings") or device.get("Power Readings") or {}
        applications = device.get("Applications Clocks") or {}
        defaults = device.get("Default Applications Clocks") or {}
        settings.append(
            {
                "index": index,
                "bus_id": device.get("bus_id"),
                "product": device.get("Product Name"),
                "persistence_mode": _known(device.get("Persistence Mode")),
                "power_limit": _known(power.get("Current Power Limit") or power.get("Power Limit")),
                "default_power_limit": _known(power.get("Default Power Limit")),
                "applications_clocks": {
                    "graphics": _known(applications.get("Graphics")),
                    "memory": _known(applications.get("Memory")),
                },
                "default_applications_clocks": {
                    "graphics": _known(defaults.get("Graphics")),
                    "memory": _known(defaults.get("Memory")),
                },
            }
        )
    return settings


def settings_of(snapshot: dict[str, Any] | None) -> list[dict[str, Any]]:
    """``gpu_settings`` of a machine snapshot (a launch's, a provenance record's); derived from its parsed
    ``nvidia-smi -q`` when the snapshot predates the settings; empty without GPUs."""
    found = (snapshot or {}).get("gpus") or {}
    return found.get("settings") or gpu_settings(found.get("nvidia_smi_q") or {})


def power_limits(snapshot: dict[str, Any] | None) -> dict[str, str]:
    """GPU index -> its power limit, from a machine snapshot."""
    return {str(s["index"]): s["power_limit"] for s in settings_of(snapshot) if s.get("power_limit")}


def _known(value: Any) -> str | None:
    return value if isinstance(value, str) and value and value != "N/A" else None


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
        "settings": gpu_settings(parsed),  # power limit, application clocks, persistence mode
        "nvidia_smi_q": parsed,
        "topology": parse_topology(topo),
        "topology_text": topo,
    }


def snapshot(repo: str | Path | None = None, engine_packages: tuple[str, ...] = ()) -> dict[str, Any]:
    """Everything about the code, software and hardware that a measurement depends on."""
    return {
        "captured_at": now_iso(),
        "specsweep": {"version": __version__, "git": git_state(repo)},
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "packages": package_versions(CORE_PACKAGES + engine_packages),
        "host": host(),
        "gpus": gpus(),
    }
