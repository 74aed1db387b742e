"""Advisory file locks: one builder per artefact, one measurement per machine (which names its holder).

On a cluster the cache of engines and models may sit on a shared filesystem (NFS, Lustre), but a
lock file there is neither node-local (it would serialise every node's measurements) nor reliable
(flock over NFS depends on the server). The measuring lock therefore lives in a node-local
directory, one lock per node and cache; naming it after the cache keeps sweeps that use separate
caches (separate users, the tests) as independent as they were with the lock inside the cache.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from specsweep.record.cache import cache_root, sha256_bytes

# Node-local, and shared by every job on the node: /run/lock (tmpfs, world-writable on Debian and
# most distributions), else /dev/shm. Not $TMPDIR: Slurm sites often give each job a private one.
NODE_LOCAL_DIRS = ("/run/lock", "/dev/shm", "/tmp")


@contextlib.contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock; blocks (without spinning) until it is free.

    Used so that two clones or two jobs never build the same artefact, and so that
    two measuring jobs never overlap whatever Snakemake's ``--cores`` says.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def lock_dir() -> Path:
    """``$SPECSWEEP_LOCK_DIR`` (must be node-local), else the first writable of ``NODE_LOCAL_DIRS``."""
    explicit = os.environ.get("SPECSWEEP_LOCK_DIR")
    if explicit:
        return Path(explicit).expanduser()
    for candidate in NODE_LOCAL_DIRS:
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return Path(candidate)
    raise RuntimeError(
        f"no writable node-local directory among {', '.join(NODE_LOCAL_DIRS)}; "
        f"set SPECSWEEP_LOCK_DIR to a directory on this machine's own disk"
    )


def measure_lock_path() -> Path:
    """The measuring lock of this node and cache: ``<lock_dir>/specsweep-measure-<cache hash>.lock``."""
    cache = cache_root().expanduser().resolve()
    return lock_dir() / f"specsweep-measure-{sha256_bytes(str(cache))[:16]}.lock"


@contextlib.contextmanager
def measuring(progress: TextIO, label: str) -> Iterator[None]:
    """Exclusive use of the machine (``measure_lock_path()``, node-local): every measuring session and
    every engine build holds it, so neither ever runs beside a measurement on this node, whatever
    ``--cores`` says; sessions on other nodes of a cluster are not held up. While held, the file names
    the holder, so a sweep that waits says for whom and since when."""
    with holding(measure_lock_path(), label, progress):
        yield


def holder(lock_path: Path) -> str:
    """Who holds ``lock_path`` and for how long, from what the holder wrote into it."""
    try:
        held = json.loads(lock_path.read_text() or "{}")
        since = float(held["since"])
    except (OSError, ValueError, KeyError, TypeError):
        return "held by a process that did not say who it is"
    return (
        f"held by {held.get('label')} (pid {held.get('pid')} on {held.get('host')}, in {held.get('cwd')}) "
        f"for {time.time() - since:.0f} s"
    )


@contextlib.contextmanager
def holding(lock_path: Path, label: str, progress: TextIO) -> Iterator[None]:
    """``exclusive``, naming this process in the lock file while it holds it, and the holder when it must wait.
    (flock dies with its holder: no stale lock after a ``kill -9``, and no stale name: it is cleared on release.)"""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(
                f"{label}: waiting for exclusive use of the machine ({lock_path}), {holder(lock_path)}",
                file=progress,
                flush=True,
            )
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.truncate(0)
            record = {"label": label, "pid": os.getpid(), "host": socket.gethostname(), "cwd": os.getcwd()}
            handle.write(json.dumps({**record, "since": time.time()}))
            handle.flush()
            yield
        finally:
            handle.truncate(0)
            fcntl.flock(handle, fcntl.LOCK_UN)
