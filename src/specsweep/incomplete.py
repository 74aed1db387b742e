"""The summary of a sweep that did not finish: every configuration listed, failed ones with where to look.

Snakemake never runs ``rule summary`` when one of its inputs failed, so with ``--keep-going`` the
configurations that did finish would have no summary, and the failed ones would silently vanish
from it. The Snakefile's ``onerror:`` handler calls ``write_summary``: it writes
``results/summary.csv`` from the configurations whose runs are all present, and lists every other
configuration with ``status`` ``failed (<its newest failed/<timestamp>/ folder>)``, ``damaged (<file>: why)``
or ``missing``; one whose runs were measured under parameters the config no longer asks for is
``stale``, its row labelled with the parameters it was measured under.

That file is not a finished output: it is marked outdated (``outdated.mark_outdated``), so the next
``snakemake`` (with any target) reruns the failed jobs and then the summary rule, which overwrites it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from specsweep import aggregate
from specsweep.adaptive import runs_by_configuration
from specsweep.atomic import DamagedFile, read_json
from specsweep.config import Configuration
from specsweep.outdated import mark_outdated
from specsweep.staleness import measured_under, stale_reason


def configuration_status(folder: Path, runs: int, configuration: Configuration, benchmark: dict[str, Any]
                         ) -> tuple[str, list[dict[str, Any]], dict[str, Any], Configuration]:
    """``ok`` (or ``stale``: measured under other parameters) with its run records, launch record and the
    configuration they were measured under; or why there are none (``failed (...)``, ``damaged (...)``, ``missing``)."""
    paths = [folder / "runs" / f"run_{i}.json" for i in range(runs)]
    try:
        launch = read_json(folder / "launch.json")
        if launch.get("status") == "completed" and all(p.exists() for p in paths):
            records = runs_by_configuration(paths).get(folder.name, [])  # adaptive extras too
            if stale_reason(launch, configuration, benchmark):
                return "stale", records, launch, measured_under(launch)
            return "ok", records, launch, configuration
    except DamagedFile as error:
        return f"damaged ({error})", [], {}, configuration
    except OSError:
        pass
    kept = sorted((folder / "failed").glob("*/error.txt"))
    if kept:
        return f"failed ({kept[-1].parent})", [], {}, configuration
    return "missing", [], {}, configuration


def write_summary(configurations: dict[str, Configuration], runs: int, results: str | Path,
                  benchmark: dict[str, Any], progress: TextIO) -> Path:
    """Write ``results/summary.csv`` for an unfinished sweep, marked outdated so that no target takes it for
    a finished one; return its path."""
    results = Path(results)
    statuses, records, launches, measured = {}, {}, {}, {}
    for name, configuration in configurations.items():
        statuses[name], records[name], launches[name], measured[name] = configuration_status(
            results / name, runs, configuration, benchmark)
    frame = aggregate.summarise(measured, records, launches)  # each row with the parameters it was measured under
    frame["status"] = frame["configuration"].map(statuses)
    path = results / "summary.csv"
    aggregate.write_csv(frame, path)
    mark_outdated(path)
    finished = sum(status == "ok" for status in statuses.values())
    print(f"specsweep: the sweep did not finish; {path} lists {finished} of {len(statuses)} configurations "
          f"with results:", file=progress)
    for name, status in statuses.items():
        if status != "ok":
            print(f"  {name}: {status}", file=progress)
    print("specsweep: rerun the same command to retry only what is missing (add --rerun-incomplete after an "
          "interruption)", file=progress)
    return path
