"""The summary of a sweep that did not finish: every configuration listed, failed ones with where to look.

Snakemake never runs ``rule summary`` when one of its inputs failed, so with ``--keep-going`` the
configurations that did finish would have no summary, and the failed ones would silently vanish
from it. The Snakefile's ``onerror:`` handler calls ``write_summary``: it writes
``results/summary.csv`` from the configurations whose runs are all present, and lists every other
configuration with ``status`` ``failed (<its newest failed/<timestamp>/ folder>)`` or ``missing``.

That file is not a finished output: the failed configurations' run files are still missing, so
the next ``snakemake`` reruns just those jobs and then the summary rule, which overwrites it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from specsweep import aggregate
from specsweep.adaptive import runs_by_configuration
from specsweep.config import Configuration


def configuration_status(folder: Path, runs: int) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    """``ok`` with its run records and launch record, or why there are none (``failed (...)``, ``missing``)."""
    paths = [folder / "runs" / f"run_{i}.json" for i in range(runs)]
    try:
        launch = json.loads((folder / "launch.json").read_text())
        if launch.get("status") == "completed" and all(p.exists() for p in paths):
            return "ok", runs_by_configuration(paths).get(folder.name, []), launch  # adaptive extras too
    except (OSError, ValueError):
        pass
    kept = sorted((folder / "failed").glob("*/error.txt"))
    if kept:
        return f"failed ({kept[-1].parent})", [], {}
    return "missing", [], {}


def write_summary(configurations: dict[str, Configuration], runs: int, results: str | Path,
                  progress: TextIO) -> Path:
    """Write ``results/summary.csv`` for an unfinished sweep; return its path."""
    results = Path(results)
    statuses, records, launches = {}, {}, {}
    for name in configurations:
        statuses[name], records[name], launches[name] = configuration_status(results / name, runs)
    frame = aggregate.summarise(configurations, records, launches)
    frame["status"] = frame["configuration"].map(statuses)
    path = results / "summary.csv"
    aggregate.write_csv(frame, path)
    finished = sum(status == "ok" for status in statuses.values())
    print(f"specsweep: the sweep did not finish; {path} lists {finished} of {len(statuses)} configurations "
          f"with results:", file=progress)
    for name, status in statuses.items():
        if status != "ok":
            print(f"  {name}: {status}", file=progress)
    print("specsweep: rerun the same command to retry only what is missing (add --rerun-incomplete after an "
          "interruption)", file=progress)
    return path
