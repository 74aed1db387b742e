"""Advisory file locks: one builder per artefact, one measurement per machine (which names its holder).

On a cluster the cache of engines and models may sit on a shared filesystem (NFS, Lustre), but a
lock file there is neither node-local (it would serialise every node's measurements) nor reliable
(flock over NFS depends on the server). The measuring lock therefore lives in a node-local
directory, one lock per node and cache; naming it after the cache keeps sweeps that use separate
caches (separate users, the tests) as independent as they were with the lock inside the cache.

That directory is shared by every user (``/run/lock`` is world-writable) and the lock's name is
predictable, so the lock lives in a folder of the user's own inside it (``specsweep-<uid>/``, mode 0700):
nobody else can plant a link there, or create the lock first and block every sweep. The folder is refused
unless it is a real folder of this user's that nobody else can write, and the lock is opened without
following a link and refused unless it is a regular file of this user's.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from specsweep.record.cache import cache_root, sha256_bytes
from specsweep.record.ongoing import Ongoing

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
    """The measuring lock of this node and cache: ``<lock_dir>/specsweep-<uid>/specsweep-measure-<cache hash>.lock``."""
    cache = cache_root().expanduser().resolve()
    return lock_dir() / f"specsweep-{os.geteuid()}" / f"specsweep-measure-{sha256_bytes(str(cache))[:16]}.lock"


class LockRefused(RuntimeError):
    """The lock's folder or file is not this user's own: something else was planted at its name."""


def _own_folder(folder: Path) -> None:
    """Make ``folder`` (mode 0700) or check the one there: a real folder of this user's that nobody else can write."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        what = (
            "a link"
            if stat.S_ISLNK(info.st_mode)
            else "not a folder"
            if not stat.S_ISDIR(info.st_mode)
            else (
                f"owned by uid {info.st_uid}"
                if info.st_uid != os.geteuid()
                else f"writable by others (mode {info.st_mode & 0o777:o})"
            )
        )
        raise LockRefused(
            f"{folder}: the measuring lock's folder is {what}, not a folder only this user (uid {os.geteuid()}) can "
            f"write; remove it if it is yours, or set SPECSWEEP_LOCK_DIR to a folder of your own on this machine's disk"
        )


def _open_own(lock_path: Path) -> TextIO:
    """The lock file, opened for reading and writing without following a link; refused unless it is a regular
    file of this user's."""
    _own_folder(lock_path.parent)
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as error:  # ELOOP: a link at its name
        raise LockRefused(f"{lock_path}: not a regular file of this user's ({error.strerror}); remove it") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise LockRefused(
            f"{lock_path}: not a regular file of this user's (uid {info.st_uid}, mode {info.st_mode:o}); remove it"
        )
    return os.fdopen(fd, "r+")


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
    with _open_own(lock_path) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(
                f"{label}: waiting for exclusive use of the machine ({lock_path}), {holder(lock_path)}",
                file=progress,
                flush=True,
            )
            # said again as the wait goes on: who holds it may change, and one line an hour ago looks like a hang
            waiting = f"{label}: waiting for exclusive use of the machine"
            with Ongoing(waiting, progress, status=lambda: holder(lock_path)):
                fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.truncate(0)
            handle.seek(0)
            record = {"label": label, "pid": os.getpid(), "host": socket.gethostname(), "cwd": os.getcwd()}
            handle.write(json.dumps({**record, "since": time.time()}))
            handle.flush()
            yield
        finally:
            handle.truncate(0)
            fcntl.flock(handle, fcntl.LOCK_UN)
