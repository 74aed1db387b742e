"""Where a configuration was measured (node, GPU model, driver), and comparisons that crossed machines.

A speedup of a configuration measured on one node over a baseline measured on another (or on another
GPU model) mixes the change with the machine: the summary says so rather than report it silently.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specsweep.record.results import Launch


def placement(machine: dict[str, Any]) -> dict[str, Any]:
    """The node a session runs on, from its machine snapshot (``provenance.machine()``) and Slurm's
    environment: hostname, GPU models and driver (None on a CPU machine), Slurm job and node if any."""
    gpus = machine.get("gpus") or {}
    return {
        "host": (machine.get("host") or {}).get("hostname"),
        "gpu_models": sorted(set(filter(None, gpus.get("models") or []))) or None,
        "gpu_driver": gpus.get("driver_version"),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "slurm_node": os.environ.get("SLURMD_NODENAME"),
    }


def of_launch(launch: Launch) -> dict[str, Any]:
    """A launch record's placement; older records without one: derived from their machine snapshot."""
    if launch.placement:
        return launch.placement
    return placement(launch.machine or {}) | {"slurm_job_id": None, "slurm_node": None}


def machine_label(where: dict[str, Any]) -> str:
    gpus = ", ".join(where.get("gpu_models") or []) or "no GPU"
    return f"{where.get('host') or 'unknown host'} ({gpus})"


# The end of the warning a cross-machine comparison carries in summary.csv (the conclusion looks for it).
CROSS_MACHINE = "the speedup compares two machines"


def cross_machine_warning(measured: dict[str, Any], baseline: dict[str, Any]) -> str | None:
    """Why a comparison is not like for like: measured on another node or GPU model than the baseline
    (None when both ran on the same host and GPU models, or when either is unknown)."""
    if not measured.get("host") or not baseline.get("host"):
        return None
    if measured["host"] == baseline["host"] and measured.get("gpu_models") == baseline.get("gpu_models"):
        return None
    return f"measured on {machine_label(measured)} but the baseline on {machine_label(baseline)}: {CROSS_MACHINE}"


@dataclass(frozen=True)
class GpuSelection:
    """The GPUs a session's engine uses (``CUDA_VISIBLE_DEVICES``), and who chose them."""

    devices: str | None  # None: the engine's environment gets no CUDA_VISIBLE_DEVICES from specsweep
    source: str
    warnings: list[str] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": self.devices} if self.devices is not None else {}


def _requested(gpus: Any) -> int:
    return int(gpus) if isinstance(gpus, int) else len(gpus or [])


def select_gpus(engine: str, gpus: Any, env: Mapping[str, str], environ: Mapping[str, str]) -> GpuSelection:
    """Which GPUs engine ``engine`` (``engines/<engine>/gpus``: a count, or a fixed list of indices) uses.

    Under a Slurm job the GPUs are the ones Slurm assigned to the job: ``CUDA_VISIBLE_DEVICES`` as Slurm
    set it, else ``SLURM_STEP_GPUS``/``SLURM_JOB_GPUS``; a fixed list then counts only as how many
    (said in a warning). Outside a scheduler a list is used as given, a count takes the first N of the
    inherited ``CUDA_VISIBLE_DEVICES`` (else 0..N-1). A configuration's own ``env`` CUDA_VISIBLE_DEVICES
    wins everywhere (``env`` is the configuration's environment, ``environ`` the job's).
    """
    wanted = _requested(gpus)
    planned = ",".join(map(str, gpus)) if isinstance(gpus, list) else None
    own = env.get("CUDA_VISIBLE_DEVICES")
    if own is not None and own != planned:
        return GpuSelection(own, "the configuration's env")
    if not wanted:
        return GpuSelection(None, "no GPU asked for")
    if job := environ.get("SLURM_JOB_ID"):
        assigned = next(
            (
                (environ[name], name)
                for name in ("CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS")
                if environ.get(name)
            ),
            None,
        )
        if assigned is None:
            raise RuntimeError(
                f"engines/{engine}/gpus asks for {wanted} GPU(s) but Slurm job {job} was given none "
                f"(no CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS or SLURM_JOB_GPUS): the measuring job must "
                f"request them (profiles/slurm: resources gpu, from engines/{engine}/gpus)"
            )
        devices, name = assigned
        if len(devices.split(",")) < wanted:
            raise RuntimeError(
                f"engines/{engine}/gpus asks for {wanted} GPU(s) but Slurm job {job} was given {devices} ({name})"
            )
        warnings = (
            [
                f"engines/{engine}/gpus lists GPUs {planned}, but under Slurm job {job} the engine uses the "
                f"{wanted} GPU(s) Slurm assigned ({name}={devices}); write gpus: {wanted} to say so"
            ]
            if planned is not None and planned != devices
            else []
        )
        return GpuSelection(devices, f"Slurm job {job} ({name})", warnings)
    if planned is not None:
        return GpuSelection(planned, f"engines/{engine}/gpus")
    inherited = [d for d in (environ.get("CUDA_VISIBLE_DEVICES") or "").split(",") if d.strip()]
    pool = inherited or [str(i) for i in range(wanted)]
    if len(pool) < wanted:
        raise RuntimeError(
            f"engines/{engine}/gpus asks for {wanted} GPU(s) but the inherited "
            f"CUDA_VISIBLE_DEVICES={environ['CUDA_VISIBLE_DEVICES']} names {len(pool)}"
        )
    return GpuSelection(
        ",".join(pool[:wanted]),
        f"engines/{engine}/gpus: {wanted}, the first of "
        + ("the inherited CUDA_VISIBLE_DEVICES" if inherited else "the machine's GPUs"),
    )


def physical_gpus(devices: str | None) -> list[dict[str, str]] | None:
    """The physical GPUs behind ``devices`` (CUDA_VISIBLE_DEVICES: indices or UUIDs) as nvidia-smi names
    them (index, UUID, PCI bus id, model); None without nvidia-smi or devices."""
    if devices is None or shutil.which("nvidia-smi") is None:
        return None
    try:
        listed = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,uuid,pci.bus_id,name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return used_gpus(devices, listed)


def used_gpus(devices: str, listed: str) -> list[dict[str, str]]:
    """The rows of nvidia-smi's ``index,uuid,pci.bus_id,name`` listing that ``devices`` names, in its order."""
    rows = [
        dict(zip(("index", "uuid", "pci_bus_id", "model"), (c.strip() for c in line.split(",", 3)), strict=False))
        for line in listed.splitlines()
        if line.strip()
    ]
    found = []
    for device in (d.strip() for d in devices.split(",") if d.strip()):
        match = [r for r in rows if device in (r.get("index"), r.get("uuid")) or r.get("uuid", "").startswith(device)]
        found.append(match[0] if match else {"index": device, "uuid": "not listed by nvidia-smi"})
    return found
