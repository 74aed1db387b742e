"""A measuring job dies with the Snakemake that started it, and ``--unlock`` refuses while a run is alive.

``kill -9`` of Snakemake leaves its job scripts running (they are its children, not its process
group's signal targets) and measuring as orphans, while a rerun starts a second session on the
same files. So the job watches its Snakemake (a pidfd: the kernel wakes the watcher when that
process ends; no polling) and stops itself with SIGTERM, the same path as a scheduler's cancel:
the server is stopped and the completed runs are kept in ``failed/<time>/``.
"""

from __future__ import annotations

import os
import select
import signal
import threading
from pathlib import Path


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state, past a command with spaces


def _command(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")


def is_snakemake(argv: list[str]) -> bool:
    """``snakemake ...`` or ``python -m snakemake ...`` (not a job script under .snakemake/scripts/)."""
    return bool(argv) and (
        Path(argv[0]).name == "snakemake"
        or argv[1:3] == ["-m", "snakemake"]
        or (len(argv) > 1 and Path(argv[1]).name == "snakemake")
    )


def ancestors(pid: int | None = None) -> list[int]:
    """The parent, grandparent, ... of ``pid`` (this process by default), up to but not including pid 1."""
    found, pid = [], _parent(pid or os.getpid())
    while pid > 1:
        found.append(pid)
        try:
            pid = _parent(pid)
        except (OSError, ValueError, IndexError):
            break
    return found


def snakemake_ancestors() -> list[int]:
    """Every Snakemake process above this one, nearest first (under Slurm: the step's Snakemake, then the
    job's, which runs the step with srun)."""
    found = []
    for pid in ancestors():
        try:
            if is_snakemake(_command(pid)):
                found.append(pid)
        except OSError:
            continue
    return found


def snakemake_ancestor() -> int | None:
    """The nearest Snakemake process above this one (None when run outside Snakemake)."""
    for pid in ancestors():
        try:
            if is_snakemake(_command(pid)):
                return pid
        except OSError:
            continue
    return None


def die_with_snakemake() -> int | None:
    """Send this process SIGTERM as soon as its Snakemake ends, however it ends; return that Snakemake's pid."""
    pid = snakemake_ancestor()
    if pid is None:
        return None
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:  # it is already gone
        os.kill(os.getpid(), signal.SIGTERM)
        return pid
    except OSError:  # no pidfd here (Linux < 5.3): no watch, as before
        return None

    def watch() -> None:
        select.select([handle], [], [])
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name=f"die-with-snakemake-{pid}", daemon=True).start()
    return pid


def other_runs_in(folder: Path) -> list[str]:
    """Live Snakemake processes and their jobs working in ``folder``, other than this one and its ancestors."""
    folder, mine = folder.resolve(), {os.getpid(), *ancestors()}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            if Path(os.readlink(entry / "cwd")).resolve() != folder:
                continue
            argv = _command(int(entry.name))
        except OSError:
            continue
        if is_snakemake(argv) or any(".snakemake/scripts/" in arg for arg in argv):
            found.append(f"pid {entry.name}: {' '.join(argv).strip()[:200]}")
    return found


def job_snakemakes(job: str) -> list[int]:
    """Snakemake processes of Slurm job ``job`` on this node that are not above this process: the batch
    script's, which runs the step (this process's Snakemake) with srun."""
    mine, wanted = {os.getpid(), *ancestors()}, f"SLURM_JOB_ID={job}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            if is_snakemake(_command(int(entry.name))) and wanted in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found
