"""Measurements are never deleted by the pipeline: a configuration's previous session is kept in
``results/<cfg>/history/<launched_at>/`` before a new session replaces it.

Snakemake deletes a job's outputs before it runs it again (its parameters changed, ``--forcerun``,
``--rerun-incomplete``, a run file went missing), so a rerun that then fails (a typo in a flag)
would leave nothing. The Snakefile's ``onstart:`` handler calls ``keep_previous_session`` for every
measuring job about to run, after the plan is made and before Snakemake touches any output: the
previous runs, launch record and server log are hard-linked (no data copied, no space needed) into
a dated folder with ``measured_under.json``, the configuration and benchmark settings they were
measured under. Until its job runs, a configuration's files also stay in place (a sweep that stops
before reaching it lists it as ``stale``). The summary reads only the current session; history is
evidence.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import TextIO

from specsweep.record import results
from specsweep.record.atomic import DamagedFile, keep_copy, partial_path, write_json
from specsweep.record.results import Launch


def _session_files(name: str, root: str | Path) -> list[Path]:
    """What one measuring session writes (the bench rule's outputs), as far as present."""
    found = [
        Path(results.launch_file(name, root)),
        Path(results.server_log(name, root)),
        Path(results.runs_dir(name, root)),
        Path(results.load_dir(name, root)),
    ]
    return [path for path in found if path.exists()]


def _stamp(launch: Launch | None, present: list[Path]) -> str:
    """``20261130T232904.123456Z`` from the launch record's ``launched_at``, else the newest file's mtime."""
    if launch and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", launch.launched_at):
        return re.sub(r"[-:]", "", launch.launched_at)
    newest = max(path.stat().st_mtime for path in present)
    return dt.datetime.fromtimestamp(newest, dt.UTC).strftime("%Y%m%dT%H%M%S.%fZ")


def keep_previous_session(name: str, progress: TextIO, root: str | Path = results.ROOT) -> Path | None:
    """Keep configuration ``name``'s session files in its ``history/<stamp>/`` (hard links: no space, no copy;
    kept once per session); return the new folder, or None when there was nothing new to keep."""
    present = _session_files(name, root)
    if not present:
        return None
    try:
        launch = results.read_launch(results.launch_file(name, root)) if present[0].name == "launch.json" else None
    except DamagedFile:
        launch = None  # kept all the same: history keeps what is there, damaged or not
    target = Path(results.history_dir(name, root)) / _stamp(launch, present)
    if target.exists():
        return None  # this session is already kept (a sweep that stopped before measuring it again)
    partial = partial_path(target)
    folder = Path(results.configuration_dir(name, root))
    files = [p for path in present for p in ([path] if path.is_file() else sorted(path.rglob("*"))) if p.is_file()]
    for path in files:
        keep_copy(path, partial / path.relative_to(folder))
    if launch:
        write_json(
            partial / "measured_under.json", {"configuration": launch.configuration, "benchmark": launch.benchmark}
        )
    partial.rename(target)  # the whole session appears at once
    status = launch.status if launch else "no launch record"
    print(
        f"{name}: the previous session ({status}, {len(files)} files) is kept in {target} before it is measured again",
        file=progress,
    )
    return target
