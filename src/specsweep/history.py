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
from typing import Any, TextIO

from specsweep.atomic import DamagedFile, keep_copy, partial_path, read_json, write_json

HISTORY = "history"
SESSION_FILES = ("launch.json", "server.log", "runs")  # what one measuring session writes


def _stamp(launch: dict[str, Any], folder: Path) -> str:
    """``20261130T232904.123456Z`` from the launch record's ``launched_at``, else the newest file's mtime."""
    launched = launch.get("launched_at")
    if isinstance(launched, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", launched):
        return re.sub(r"[-:]", "", launched)
    newest = max((folder / name).stat().st_mtime for name in SESSION_FILES if (folder / name).exists())
    return dt.datetime.fromtimestamp(newest, dt.UTC).strftime("%Y%m%dT%H%M%S.%fZ")


def keep_previous_session(folder: Path, progress: TextIO) -> Path | None:
    """Keep the session files present in ``folder`` in ``history/<stamp>/`` (hard links: no space, no
    copy; kept once per session); return the new folder, or None when there was nothing new to keep."""
    present = [folder / name for name in SESSION_FILES if (folder / name).exists()]
    if not present:
        return None
    try:
        launch = read_json(folder / "launch.json") if (folder / "launch.json").exists() else {}
    except DamagedFile:
        launch = {}  # kept all the same: history keeps what is there, damaged or not
    target = folder / HISTORY / _stamp(launch, folder)
    if target.exists():
        return None  # this session is already kept (a sweep that stopped before measuring it again)
    partial = partial_path(target)
    files = [p for path in present for p in ([path] if path.is_file() else sorted(path.rglob("*"))) if p.is_file()]
    for path in files:
        keep_copy(path, partial / path.relative_to(folder))
    if launch:
        write_json(partial / "measured_under.json", {key: launch.get(key) for key in ("configuration", "benchmark")})
    partial.rename(target)  # the whole session appears at once
    print(f"{folder.name}: the previous session ({launch.get('status', 'no launch record')}, {len(files)} files) is "
          f"kept in {target} before it is measured again", file=progress)
    return target
