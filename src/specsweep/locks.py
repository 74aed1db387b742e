"""Advisory file locks: one builder per artefact, one measurement per machine."""

from __future__ import annotations

import contextlib
import fcntl
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
    engine build holds it, so neither ever runs beside a measurement, whatever ``--cores`` says."""
    lock = cache_root() / "measure.lock"
    print(f"{label}: waiting for exclusive use of the machine ({lock})", file=progress, flush=True)
    with exclusive(lock):
        yield
