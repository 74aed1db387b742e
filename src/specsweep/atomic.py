"""Atomic file writes: every file the pipeline writes appears whole or not at all.

A job killed mid-write (SIGKILL, OOM, power loss) must never leave a truncated JSON or CSV under
its final name, where a later run or Snakemake would trust it. Writers produce a temporary file
beside the target (same filesystem, so the rename is atomic), flush it to disk, then rename it.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

PARTIAL = ".partial"


def partial_path(path: Path) -> Path:
    """A unique hidden name beside ``path``: concurrent writers never share one, and a leftover from a
    killed writer is plainly partial (it never matches an output name Snakemake or a reader asks for)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}{PARTIAL}")


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path to write (by any library); on success it replaces ``path``, on error it goes."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(target)
    try:
        yield partial
        with open(partial, "rb+") as written:  # data on disk before the name points at it
            os.fsync(written.fileno())
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """``open`` for writing whose result appears under ``path`` only once the block ends without error."""
    with atomic_path(path) as partial, open(partial, mode, **kwargs) as handle:
        yield handle


def atomic_write(path: str | Path, data: str | bytes) -> None:
    with atomic_open(path, "wb" if isinstance(data, bytes) else "w") as handle:
        handle.write(data)


def write_json(path: str | Path, data: Any) -> None:
    """Serialised before anything touches the disk, then written atomically: never half a record."""
    atomic_write(path, json.dumps(data, indent=2, sort_keys=True, allow_nan=True) + "\n")
