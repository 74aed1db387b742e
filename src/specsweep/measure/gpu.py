"""GPU memory as data: read it before launch, while serving and after teardown.

A stopped server that still holds GPU memory is the orphaned-server problem users complain
about (SGLang schedulers reparented to PID 1). The session waits, bounded, until every watched
GPU is back to its pre-launch level and fails loudly if it is not.
Readings come from ``nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits``.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field


class GpuMemoryNotReleased(RuntimeError):
    pass


def parse_memory_csv(text: str) -> dict[int, int]:
    """``"0, 750\\n1, 0"`` -> ``{0: 750, 1: 0}`` (MiB per GPU index); malformed lines are skipped."""
    used: dict[int, int] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            used[int(parts[0])] = int(parts[1])
    return used


def parse_compute_apps(text: str) -> list[dict[str, str]]:
    """Rows of ``--query-compute-apps=pid,process_name,used_memory --format=csv,noheader``."""
    apps = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            apps.append({"pid": parts[0], "process": parts[1], "used_memory": parts[2]})
    return apps


def _nvidia_smi(*query: str) -> str:
    return subprocess.run(["nvidia-smi", *query], capture_output=True, text=True, timeout=30, check=True).stdout


def available() -> bool:
    return shutil.which("nvidia-smi") is not None


@dataclass
class MemoryRecord:
    """MiB in use per watched GPU at each phase of a session."""

    gpus: list[int] | None
    phases: dict[str, dict[int, int]] = field(default_factory=dict)
    released_after_s: float | None = None

    def read(self, phase: str) -> dict[int, int]:
        used = parse_memory_csv(_nvidia_smi("--query-gpu=index,memory.used", "--format=csv,noheader,nounits"))
        if self.gpus is not None:
            used = {i: m for i, m in used.items() if i in self.gpus}
        self.phases[phase] = used
        return used

    def wait_released(self, timeout_s: float, tolerance_mib: int) -> None:
        """Poll once a second until every GPU is within ``tolerance_mib`` of its pre-launch use."""
        before = self.phases["before_launch"]
        started = time.monotonic()
        while True:
            after = self.read("after_teardown")
            excess = {i: after.get(i, 0) - before.get(i, 0) for i in before}
            if all(e <= tolerance_mib for e in excess.values()):
                self.released_after_s = round(time.monotonic() - started, 2)
                return
            if time.monotonic() - started > timeout_s:
                apps = parse_compute_apps(
                    _nvidia_smi("--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader")
                )
                raise GpuMemoryNotReleased(
                    f"GPU memory not released {timeout_s:.0f} s after the server stopped: MiB above the pre-launch "
                    f"level per GPU {excess}; processes holding GPU memory: {apps or 'none listed'}. "
                    f"An orphaned engine process may still hold it: stop it before the next measurement."
                )
            time.sleep(1.0)

    def as_dict(self) -> dict[str, object]:
        return {
            "gpus": self.gpus,
            "mib_used": {p: {str(i): m for i, m in v.items()} for p, v in self.phases.items()},
            "released_after_s": self.released_after_s,
        }
