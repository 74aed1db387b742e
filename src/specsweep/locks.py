"""Advisory file locks: one builder per artefact, one measurement per machine (which names its holder)."""

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

from specsweep.cache import cache_root


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


@contextlib.contextmanager
def measuring(progress: TextIO, label: str) -> Iterator[None]:
    """Exclusive use of the machine (``cache_root()/measure.lock``): every measuring session and every
    engine build holds it, so neither ever runs beside a measurement, whatever ``--cores`` says.
    While held, the file names the holder, so a sweep that waits says for whom and since when."""
    with holding(cache_root() / "measure.lock", label, progress):
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
