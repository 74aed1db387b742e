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
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from specsweep.record import results

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
    declared = [Path(p) for p in run_files]
    missing = [str(p) for p in declared if not p.exists()]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        return f"a run file it rests on is missing ({missing[0]}{more})"
    try:
        with open(summary, newline="") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error):
        return "it cannot be read"
    if any(str(row.get("status")).startswith(PROVISIONAL) for row in rows):
        return "it is the provisional summary of a sweep that did not finish"
    # adaptive extras (runs/extra/) are no declared output: count every run file against the rows
    on_disk = Counter(results.configuration_of(p) for p in results.with_extra_runs(declared))
    for row in rows:
        counted = _int(row.get("runs")) + _int(row.get("runs_excluded"))
        if row.get("configuration") in on_disk and counted != on_disk[row["configuration"]]:
            return (
                f"it counts {counted} runs of {row['configuration']}, but {on_disk[row['configuration']]} run "
                f"files are on disk"
            )
    return None


def _int(text: str | None) -> int:
    try:
        return int(float(text or 0))
    except ValueError:
        return 0


def check_summary(summary: str | Path, run_files: Iterable[str | Path], progress: TextIO) -> None:
    """Mark ``summary`` outdated, and say why, when it does not describe the runs on disk."""
    reason = why_outdated(summary, run_files)
    if reason:
        mark_outdated(summary)
        print(f"specsweep: {summary} will be remade: {reason}", file=progress)


def check_load_tables(tables: Iterable[str | Path], window_files: Iterable[str | Path], progress: TextIO) -> None:
    """Mark each load table outdated, and say why, when a window file it rests on is missing: Snakemake would
    otherwise say "Nothing to be done" and the table would go on counting the deleted window."""
    missing = [str(p) for p in window_files if not Path(p).exists()]
    if not missing:
        return
    more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
    for table in tables:
        if Path(table).exists() and Path(table).stat().st_mtime != 0:
            mark_outdated(table)
            print(
                f"specsweep: {table} will be remade: a window file it rests on is missing ({missing[0]}{more})",
                file=progress,
            )
