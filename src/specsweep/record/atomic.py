"""Atomic file writes: every file the pipeline writes appears whole or not at all.

A job killed mid-write (SIGKILL, OOM, power loss) must never leave a truncated JSON or CSV under
its final name, where a later run or Snakemake would trust it. Writers produce a temporary file
beside the target (same filesystem, so the rename is atomic), flush it to disk, then rename it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
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


class DamagedFile(ValueError):
    """A record file that exists but cannot be read: the message names the file and the fix."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(
            f"{path}: damaged ({why}); delete it and rerun the same command to make it again "
            f"(a run file: its configuration is measured again)"
        )
        self.path, self.why = path, why


def read_json(path: str | Path) -> Any:
    """A JSON record, or ``DamagedFile`` naming the file (never a bare ``JSONDecodeError``)."""
    try:
        return json.loads(Path(path).read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DamagedFile(Path(path), f"not JSON: {error}") from None


def set_aside(damaged: DamagedFile) -> Path:
    """Rename a damaged file to ``<name>.damaged`` beside it (kept as evidence, no longer an output): the job
    that makes it runs again next time. Return the new path."""
    kept = damaged.path.with_name(f"{damaged.path.name}.damaged")
    try:
        os.replace(damaged.path, kept)
    except FileNotFoundError:  # a job beside this one read it too, and set it aside first
        if not kept.exists():
            raise
    return kept


def keep_copy(source: str | Path, target: str | Path) -> None:
    """``target`` becomes a copy of ``source`` that appears whole or not at all: a hard link where the
    filesystem allows it (no data written, so it works on a full disk; the pipeline replaces files by
    rename, never in place, so the link keeps the old content), else a copy under a partial name, renamed."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        with atomic_path(target) as partial:
            shutil.copy2(source, partial)


ERROR_RESERVE_BYTES = 64 * 1024


class ErrorReserve:
    """Disk space set aside while a session runs, so that its error report is written even on a full disk:
    the report overwrites blocks this file already holds (no new space), then takes its name by rename."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / ".error-reserve"
        try:
            with open(self.path, "wb") as handle:
                handle.write(bytes(ERROR_RESERVE_BYTES))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError:  # no room even now: write() falls back to an ordinary atomic write
            self.path.unlink(missing_ok=True)

    def write(self, target: Path, text: str) -> None:
        data = text.encode(errors="replace")[-ERROR_RESERVE_BYTES:]  # a traceback's end says the most
        if not self.path.exists():
            atomic_write(target, data)
            return
        with open(self.path, "r+b") as handle:
            handle.write(data)
            handle.truncate(len(data))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(self.path, target)

    def release(self) -> None:
        self.path.unlink(missing_ok=True)
