"""The machine-wide measuring lock, and who holds it: a sweep that waits says for whom and since when.

The lock is an advisory ``flock`` on ``measure.lock`` (it dies with its holder: no stale lock after
a ``kill -9``). While held, the file names the holder (label, pid, working directory, since when),
so a second sweep waiting on the machine does not wait in silence.
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


def holder(lock_path: Path) -> str:
    """Who holds ``lock_path`` and for how long, from what the holder wrote (``unknown`` when it wrote nothing)."""
    try:
        held = json.loads(lock_path.read_text() or "{}")
        since = float(held["since"])
    except (OSError, ValueError, KeyError, TypeError):
        return "held by a process that did not say who it is"
    return (f"held by {held.get('label')} (pid {held.get('pid')} on {held.get('host')}, in {held.get('cwd')}) "
            f"for {time.time() - since:.0f} s")


@contextlib.contextmanager
def hold(lock_path: Path, label: str, progress: TextIO) -> Iterator[None]:
    """Exclusive use of ``lock_path``; blocks (without spinning) until it is free, saying who holds it."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"{label}: waiting for exclusive use of the machine ({lock_path}), {holder(lock_path)}",
                  file=progress, flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.truncate(0)
            handle.write(json.dumps({"label": label, "pid": os.getpid(), "host": socket.gethostname(),
                                     "cwd": os.getcwd(), "since": time.time()}))
            handle.flush()
            yield
        finally:
            handle.truncate(0)
            fcntl.flock(handle, fcntl.LOCK_UN)
