"""Where downloaded and built artefacts live: a per-user cache shared by every clone."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO


def cache_root() -> Path:
    """``$SPECSWEEP_CACHE``, else ``$XDG_CACHE_HOME/specsweep``, else ``~/.cache/specsweep``."""
    explicit = os.environ.get("SPECSWEEP_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "specsweep"


def sha256_bytes(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


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
    from specsweep.machine_lock import hold

    with hold(cache_root() / "measure.lock", label, progress):
        yield
