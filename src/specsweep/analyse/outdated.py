"""A ``results/summary.csv`` that does not describe what is on disk never satisfies a target.

Snakemake does not look behind an output that exists: with ``results/summary.csv`` present it says
"Nothing to be done" even when a run file it rests on was deleted, or when the file is the
provisional summary written after a failure (rows ``failed``, ``missing``, ``stale``). Such a
summary is made older than any of its inputs (mtime 1970, the data untouched), so the next
``snakemake`` remakes it, measuring again whatever is missing first; only by a Snakemake that runs
jobs (``executes``): a dry run, a report or a listing changes nothing on disk.
"""

from __future__ import annotations

import csv
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TextIO

from specsweep.plan.config_errors import shown, user_command
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


def check_summary(summary: str | Path, run_files: Iterable[str | Path], progress: TextIO, mark: bool = True) -> None:
    """Say why ``summary`` does not describe the runs on disk, when it does not, and (``mark``: a Snakemake that
    runs jobs) mark it outdated."""
    reason = why_outdated(summary, run_files)
    if reason:
        if mark:
            mark_outdated(summary)
        print(
            f"specsweep: {summary} {'will be remade' if mark else 'would be remade by a run'}: {reason}", file=progress
        )


def check_results(
    summary: str | Path,
    run_files: Iterable[str | Path],
    tables: Iterable[str | Path],
    window_files: Iterable[str | Path],
    configurations: Iterable[str],
    progress: TextIO,
    mark: bool = True,
) -> None:
    """``check_summary`` and ``check_load_tables`` of the sweep of ``configurations``, when the results there
    are its own. A summary.csv of other configurations is another sweep's (``compare`` run without the
    ``--configfile`` that measured them reads the default config): its run files are not this config's, and
    marking its tables would make that sweep's next run recompute them for nothing."""
    if other_sweep(summary, configurations):
        return
    check_summary(summary, run_files, progress, mark)
    check_load_tables(tables, window_files, progress, mark)


# Snakemake options after which it runs no job (it reports, lists, plans or checks): the workflow then changes
# nothing on disk. Long options by name; short ones also inside a cluster such as -np.
NON_EXECUTING = frozenset(
    [
        "--dry-run",
        "--dryrun",
        "--report",
        "--lint",
        "--list-rules",
        "--list",
        "--list-target-rules",
        "--lt",
        "--dag",
        "--d3dag",
        "--rulegraph",
        "--filegraph",
        "--summary",
        "--detailed-summary",
        "--unlock",
        "--cleanup-metadata",
        "--cm",
        "--touch",
        "--list-changes",
        "--lc",
        "--list-input-changes",
        "--li",
        "--list-params-changes",
        "--lp",
        "--list-code-changes",
        "--list-untracked",
        "--lu",
        "--delete-all-output",
        "--delete-temp-output",
        "--archive",
        "--containerize",
        "--export-cwl",
        "--print-compilation",
        "--cleanup-shadow",
        "--conda-create-envs-only",
        "--conda-cleanup-envs",
        "--generate-unit-tests",
    ]
)
NON_EXECUTING_SHORT = frozenset("ntlSD")  # -n dry run, -t touch, -l list, -S summary, -D detailed summary


def executes(argv: Sequence[str]) -> bool:
    """Whether the Snakemake started with ``argv`` (its options, sys.argv[1:]) runs jobs; ``--report`` with
    ``--report-after-run`` does."""
    words = [w.split("=", 1)[0] for w in argv]
    if "--report-after-run" in words:
        words = [w for w in words if w != "--report"]
    for word in words:
        if word in NON_EXECUTING:
            return False
        if word.startswith("-") and not word.startswith("--"):
            letters = word[1:].split("=", 1)[0]
            flags = letters[: next((i for i, c in enumerate(letters) if not c.isalpha()), len(letters))]
            if flags and flags[0] in "cjsdCRU":  # an option taking a value: -c1, -j 4, -s Snakefile
                continue
            if set(flags) & NON_EXECUTING_SHORT:
                return False
    return True


def other_sweep(summary: str | Path, configurations: Iterable[str]) -> list[str] | None:
    """The configurations of ``summary`` when they are not the sweep's ``configurations`` (results made with
    another config file); None when they are, or there is no readable summary."""
    try:
        with open(summary, newline="") as handle:
            found = [row.get("configuration", "") for row in csv.DictReader(handle)]
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    return found if found and set(found) != set(configurations) else None


def other_sweep_message(summary: str | Path, found: list[str], config_files: Sequence[str | Path]) -> str:
    """Why a report of these results is refused, and the command that makes the right one."""
    command = user_command(f"--report {Path(summary).parent}/report.html", ["<that file>"])
    return (
        f"specsweep: {summary} holds the sweep of {', '.join(found)}, but {' '.join(map(shown, config_files))} "
        f"defines other configurations: a report would describe that config, not these results. Give the config "
        f"file that measured them: {command}"
    )


def check_load_tables(
    tables: Iterable[str | Path], window_files: Iterable[str | Path], progress: TextIO, mark: bool = True
) -> None:
    """Mark each load table outdated, and say why, when a window file it rests on is missing: Snakemake would
    otherwise say "Nothing to be done" and the table would go on counting the deleted window."""
    missing = [str(p) for p in window_files if not Path(p).exists()]
    if not missing:
        return
    more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
    for table in tables:
        if Path(table).exists() and Path(table).stat().st_mtime != 0:
            if mark:
                mark_outdated(table)
            print(
                f"specsweep: {table} {'will be remade' if mark else 'would be remade by a run'}: a window file it "
                f"rests on is missing ({missing[0]}{more})",
                file=progress,
            )
