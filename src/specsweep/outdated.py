"""A ``results/summary.csv`` that does not describe what is on disk never satisfies a target.

Snakemake does not look behind an output that exists: with ``results/summary.csv`` present it says
"Nothing to be done" even when a run file it rests on was deleted, or when the file is the
provisional summary written after a failure (rows ``failed``, ``missing``, ``stale``). Such a
summary is made older than any of its inputs (mtime 1970, the data untouched), so the next
``snakemake`` remakes it, measuring again whatever is missing first.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

# Row statuses only the provisional summary (incomplete.write_summary) writes.
PROVISIONAL = ("failed", "missing", "stale", "damaged")


def mark_outdated(path: str | Path) -> None:
    """Older than any input: Snakemake's mtime check reruns the job that makes ``path``."""
    os.utime(path, (0, 0))


def why_outdated(summary: str | Path, run_files: Iterable[str | Path]) -> str | None:
    """Why ``summary`` no longer holds (None when it does, or does not exist)."""
    summary = Path(summary)
    if not summary.exists() or summary.stat().st_mtime == 0:
        return None
    missing = [str(p) for p in run_files if not os.path.exists(p)]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        return f"a run file it rests on is missing ({missing[0]}{more})"
    try:
        with open(summary, newline="") as handle:
            statuses = {row.get("status") for row in csv.DictReader(handle)}
    except (OSError, UnicodeDecodeError, csv.Error):
        return "it cannot be read"
    if any(str(status).startswith(PROVISIONAL) for status in statuses):
        return "it is the provisional summary of a sweep that did not finish"
    return None


def check_summary(summary: str | Path, run_files: Iterable[str | Path], progress: TextIO) -> None:
    """Mark ``summary`` outdated, and say why, when it does not describe the runs on disk."""
    reason = why_outdated(summary, run_files)
    if reason:
        mark_outdated(summary)
        print(f"specsweep: {summary} will be remade: {reason}", file=progress)
