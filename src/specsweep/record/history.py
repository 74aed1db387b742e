"""Measurements are never deleted by the pipeline: a configuration's previous session is kept in
``results/<cfg>/history/<launched_at>/`` before a new session replaces it.

Snakemake deletes a job's outputs before it runs it again (its parameters changed, ``--forcerun``,
``--rerun-incomplete``, a run file went missing), so a rerun that then fails (a typo in a flag)
would leave nothing. The Snakefile's ``onstart:`` handler calls ``keep_previous_session`` for every
measuring job about to run, after the plan is made and before Snakemake touches any output: the
previous runs, load windows, launch record and server log are hard-linked (no data copied, no space
needed) into a dated folder with ``measured_under.json``, the configuration and benchmark settings they
were measured under. Until its job runs, a configuration's files also stay in place (a sweep that stops
before reaching it lists it as ``stale``). The summary reads only the current session; history is
evidence.

A session killed outright (``kill -9``, the OOM killer) writes no ``failed/``, and Snakemake deletes its
outputs: its completed runs and windows survive only as the links in ``results/<cfg>/.session/``
(``results.SESSION_LINKS``, ``.session-<attempt>`` per attempt), which are kept the same way
(``keep_leftover_session``) before a new session replaces them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from specsweep.record import results
from specsweep.record.atomic import DamagedFile, atomic_write, keep_copy, partial_path, write_json
from specsweep.record.results import Launch


def _session_files(name: str, root: str | Path) -> list[Path]:
    """The files one measuring session wrote (the bench rule's outputs) under ``root/name``, as far as
    present; empty folders (``runs/``, ``load/<level>/``) hold nothing to keep."""
    found = [
        Path(results.launch_file(name, root)),
        Path(results.server_log(name, root)),
        Path(results.runs_dir(name, root)),
        Path(results.load_dir(name, root)),
    ]
    return [p for path in found for p in ([path] if path.is_file() else sorted(path.rglob("*"))) if p.is_file()]


def _stamp(launch: Launch | None, present: list[Path]) -> str:
    """``20261130T232904.123456Z`` from the launch record's ``launched_at``, else the newest file's mtime."""
    if launch and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", launch.launched_at):
        return re.sub(r"[-:]", "", launch.launched_at)
    newest = max(path.stat().st_mtime for path in present)
    return dt.datetime.fromtimestamp(newest, dt.UTC).strftime("%Y%m%dT%H%M%S.%fZ")


# Secret values out of a server log (a killed session never redacted its own): bytes in, bytes out.
Redaction = Callable[[bytes], bytes]


def keep_previous_session(
    name: str, progress: TextIO, root: str | Path = results.ROOT, redact: Redaction | None = None
) -> Path | None:
    """Keep configuration ``name``'s session files in its ``history/<stamp>/`` (hard links: no space, no copy;
    kept once per session), and those killed sessions left in ``.session*/``; return the folder of the
    files in place (else of the leftovers), or None when there was nothing new to keep."""
    leftover = keep_leftover_session(name, progress, root, redact)
    kept = _keep(name, root, Path(results.history_dir(name, root)), f"{name}: the previous session", progress, redact)
    return kept or (leftover[-1] if leftover else None)


def keep_leftover_session(
    name: str, progress: TextIO, root: str | Path = results.ROOT, redact: Redaction | None = None
) -> list[Path]:
    """Keep the links killed sessions left in ``results/<cfg>/.session*/`` (one folder per attempt) in
    ``history/`` (see the module)."""
    folder = Path(results.configuration_dir(name, root))
    leftovers = (
        sorted(p.name for p in folder.glob(results.SESSION_LINKS + "*") if p.is_dir()) if folder.is_dir() else []
    )
    kept = [
        _keep(
            links,
            folder,
            Path(results.history_dir(name, root)),
            f"{name}: a session killed before it could keep its results (kill -9, the OOM killer, a lost node?)",
            progress,
            redact,
        )
        for links in leftovers
    ]
    return [k for k in kept if k is not None]


def _keep(
    name: str, root: str | Path, history: Path, what: str, progress: TextIO, redact: Redaction | None
) -> Path | None:
    """Link the session files under ``root/name`` into ``history/<stamp>/``, which appears at once; a server
    log that still holds a secret is copied redacted instead."""
    files = _session_files(name, root)
    if not files:
        return None
    launch_file = Path(results.launch_file(name, root))
    try:
        launch = results.read_launch(launch_file) if launch_file in files else None
    except DamagedFile:
        launch = None  # kept all the same: history keeps what is there, damaged or not
    target = history / _stamp(launch, files)
    if target.exists():
        return None  # this session is already kept (a sweep that stopped before measuring it again)
    partial = partial_path(target)
    folder = Path(results.configuration_dir(name, root))
    log = Path(results.server_log(name, root))
    for path in files:
        if redact is not None and path == log and (clean := redact(raw := path.read_bytes())) != raw:
            atomic_write(partial / path.relative_to(folder), clean)
        else:
            keep_copy(path, partial / path.relative_to(folder))
    if launch:
        write_json(
            partial / "measured_under.json", {"configuration": launch.configuration, "benchmark": launch.benchmark}
        )
    partial.rename(target)  # the whole session appears at once
    status = launch.status if launch else "no launch record"
    print(f"{what} ({status}, {len(files)} files) is kept in {target} before it is measured again", file=progress)
    return target
