"""Where a configuration was measured (node, GPU model, driver), and comparisons that crossed machines.

A speedup of a configuration measured on one node over a baseline measured on another (or on another
GPU model) mixes the change with the machine: the summary says so rather than report it silently.
"""

from __future__ import annotations

import os
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


def cross_machine_warning(measured: dict[str, Any], baseline: dict[str, Any]) -> str | None:
    """Why a comparison is not like for like: measured on another node or GPU model than the baseline
    (None when both ran on the same host and GPU models, or when either is unknown)."""
    if not measured.get("host") or not baseline.get("host"):
        return None
    if measured["host"] == baseline["host"] and measured.get("gpu_models") == baseline.get("gpu_models"):
        return None
    return (
        f"measured on {machine_label(measured)} but the baseline on {machine_label(baseline)}: "
        f"the speedup compares two machines"
    )
