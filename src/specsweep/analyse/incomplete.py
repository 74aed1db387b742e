"""The summary of a sweep that did not finish: every configuration listed, failed ones with where to look.

Snakemake never runs ``rule summary`` when one of its inputs failed, so with ``--keep-going`` the
configurations that did finish would have no summary, and the failed ones would silently vanish
from it. The Snakefile's ``onerror:`` handler calls ``write_summary``: it writes
``results/summary.csv`` with the summary job's builder (``aggregate.summary_table``, so the same
columns) from the configurations whose runs are all present, and lists every other configuration
with ``status`` ``failed (<its newest failed/<timestamp>/ folder>)``, ``damaged (<file>: why)`` or
``missing``; one whose runs were measured under parameters the config no longer asks for is ``stale``,
its row labelled with the parameters it was measured under. Server logs are
not parsed here (that is the summary job's work); profile.csv files an earlier summary job wrote are used.

A sweep whose every configuration finished and whose summary.csv is up to date keeps it (a job after
the measurements failed: ``compare``, an archive, a figure). Otherwise that file is not a finished
output: it is marked outdated (``outdated.mark_outdated``), so the next
``snakemake`` (with any target) reruns the failed jobs and then the summary rule, which overwrites it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from specsweep.analyse import aggregate
from specsweep.analyse.outdated import mark_outdated, other_sweep, why_outdated
from specsweep.plan import design
from specsweep.plan.config import Configuration
from specsweep.plan.staleness import measured_under, stale_reason
from specsweep.record import results
from specsweep.record.atomic import DamagedFile
from specsweep.record.results import Launch, Run


def configuration_status(
    configuration: Configuration,
    runs: int,
    root: str | Path,
    benchmark: dict[str, Any],
    since: float | None = None,
) -> tuple[str, list[Run], Launch | None, Configuration]:
    """``ok`` (or ``stale``: measured under other parameters) with its run records, launch record and the
    configuration they were measured under; or why there are none (``failed (...)``, ``damaged (...)``,
    ``missing``). ``since`` (a time.time() of this run's start): a failed/ folder older than it is an
    earlier attempt's and is named as such, never as this failure's evidence."""
    name = configuration.name
    paths = [Path(results.run_file(name, i, root)) for i in range(runs)]
    try:
        launch = results.read_launch(results.launch_file(name, root))
        if launch.completed and all(p.exists() for p in paths):
            records = results.load_runs(paths).get(name, [])  # adaptive extras too
            if stale_reason(launch, configuration, benchmark):
                return "stale", records, launch, measured_under(launch)
            return "ok", records, launch, configuration
    except DamagedFile as damaged:
        return f"damaged ({damaged.path}: {damaged.why})", [], None, configuration
    except OSError:
        pass
    kept = sorted(Path(results.failed_dir(name, root)).glob("*/error.txt"))
    if kept and since is not None and kept[-1].stat().st_mtime < since:
        return (
            f"failed before its session kept anything (the newest evidence, {kept[-1].parent}, is an earlier "
            f"attempt's)",
            [],
            None,
            configuration,
        )
    if kept:
        return f"failed ({kept[-1].parent})", [], None, configuration
    return "missing", [], None, configuration


def _up_to_date(summary: Path, configurations: dict[str, Configuration], runs: int, root: str | Path) -> bool:
    """``summary`` is the finished summary of these configurations: not provisional or outdated, and written
    after every run and launch file it rests on."""
    if not summary.exists() or summary.stat().st_mtime == 0 or other_sweep(summary, configurations):
        return False
    sources = [Path(results.launch_file(name, root)) for name in configurations]
    sources += results.with_extra_runs(results.run_file(name, i, root) for name in configurations for i in range(runs))
    written = summary.stat().st_mtime
    return why_outdated(summary, sources[len(configurations) :]) is None and all(
        p.exists() and p.stat().st_mtime <= written for p in sources
    )


def _newer(derived: Path, source: Path) -> bool:
    """``derived`` exists and was written after ``source`` (a profile of this session's log, not an older one)."""
    return derived.exists() and source.exists() and derived.stat().st_mtime >= source.stat().st_mtime


def write_summary(
    configurations: dict[str, Configuration],
    runs: int,
    root: str | Path,
    benchmark: dict[str, Any],
    profile_parsers: dict[str, dict[str, Any]],
    progress: TextIO,
    since: float | None = None,
) -> Path:
    """Write ``<root>/summary.csv`` for an unfinished sweep, marked outdated so that no target takes it for a
    finished one; return its path. Each row is labelled with the parameters it was measured under."""
    statuses: dict[str, str] = {}
    records: dict[str, list[Run]] = {}
    launches: dict[str, Launch] = {}
    measured_as: dict[str, Configuration] = {}
    for name, configuration in configurations.items():
        statuses[name], records[name], launch, measured_as[name] = configuration_status(
            configuration, runs, root, benchmark, since
        )
        if launch is not None:
            launches[name] = launch
    path = Path(root) / Path(results.SUMMARY).name
    if all(status == "ok" for status in statuses.values()) and _up_to_date(path, configurations, runs, root):
        # a job after the sweep failed (compare, archive, a figure): its results are whole, nothing to redo
        print(
            f"specsweep: every configuration finished and {path} is up to date; the failed job above is not "
            f"part of the sweep's measurements",
            file=progress,
        )
        return path
    profiles = {
        name: pd.read_csv(profile)
        for name in configurations
        if statuses[name] == "ok"
        and _newer(profile := Path(results.profile_file(name, root)), Path(results.server_log(name, root)))
    }
    # each row with the configuration it was measured under (stale rows: their old parameters)
    frame = aggregate.summary_table(
        aggregate.Measured(measured_as, records, launches, profiles),
        profile_parsers,
        statuses,
        benchmark.get("detect_pct"),
        design.session_range(benchmark),
    )
    aggregate.write_csv(frame, path)
    mark_outdated(path)
    finished = sum(status == "ok" for status in statuses.values())
    print(
        f"specsweep: the sweep did not finish; {path} lists {finished} of {len(statuses)} configurations with results:",
        file=progress,
    )
    for name, status in statuses.items():
        if status != "ok":
            print(f"  {name}: {status}", file=progress)
    print(
        "specsweep: rerun the same command to retry only what is missing (add --rerun-incomplete after an "
        "interruption)",
        file=progress,
    )
    return path
