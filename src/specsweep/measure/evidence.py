"""A session's files: where they are, each record written as soon as it exists (and first into a shadow folder
Snakemake does not know), the server log's offsets between requests, its redaction, and what is kept in
``failed/<timestamp>/`` when the session fails (Snakemake deletes a failed job's outputs)."""

from __future__ import annotations

import contextlib
import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specsweep.measure import claim as claims
from specsweep.measure.hiding import Hidden
from specsweep.record import results
from specsweep.record.atomic import ErrorReserve, atomic_write, keep_copy, write_json
from specsweep.record.clock import now_stamp
from specsweep.record.results import with_extra_runs


@dataclass(frozen=True)
class SessionPaths:
    log: Path
    launch: Path
    runs: list[Path]
    stale_pgid: Path
    failed_root: Path
    # load windows by level label (empty without benchmark.load)
    windows: dict[str, list[Path]] = field(default_factory=dict)
    # this attempt's claim on the folder (claim.py), once taken
    claim: claims.Claim | None = None
    # the SLO rate search's record (benchmark.load.rate_search; None without one)
    rate_search: Path | None = None

    @property
    def shadow(self) -> Path:
        """Hard links to the session's evidence under names Snakemake does not know: on a cluster,
        Snakemake on the node deletes a cancelled job's outputs while the session is still keeping them.
        One per attempt (.session-<attempt>): an orphaned session on a failed node never writes into the
        next attempt's."""
        return self.failed_root.parent / f"{results.SESSION_LINKS}-{claims.attempt_key()}"

    def own(self, path: Path) -> Path:
        """Where this attempt writes ``path``: the path itself, or, once a newer attempt took the
        configuration over, the same name in the failed/ folder this attempt's evidence was moved to."""
        return self.claim.redirect(path) if self.claim else path

    def check_claim(self) -> None:
        """Stop (ClaimLost) when a newer attempt took the configuration over: this session was orphaned."""
        if self.claim:
            self.claim.check()

    @classmethod
    def of(cls, name: str, runs: int, windows: list[str] | None = None, rate_search: str | None = None) -> SessionPaths:
        """A configuration's session files in the results tree (the bench rule's outputs and more)."""
        return cls(
            log=Path(results.server_log(name)),
            launch=Path(results.launch_file(name)),
            runs=[Path(results.run_file(name, i)) for i in range(runs)],
            # per node: a group left on one node can be stopped only there (a new attempt elsewhere must
            # not signal whatever has that pid on its own node)
            stale_pgid=Path(results.stale_pgid_file(name)).with_suffix(f".{claims.this_node()}.pgid"),
            failed_root=Path(results.failed_dir(name)),
            windows=by_level(windows or []),
            rate_search=Path(rate_search) if rate_search else None,
        )

    def all_windows(self) -> list[Path]:
        return [path for level in self.windows.values() for path in level]


def by_level(windows: list[str]) -> dict[str, list[Path]]:
    """The bench rule's window outputs (results.window_file) grouped by level label, in order."""
    grouped: dict[str, list[Path]] = {}
    for window in map(Path, windows):
        grouped.setdefault(window.parent.name, []).append(window)
    return grouped


LOG_QUIET_S = 0.05  # the log unchanged this long: the previous request's late lines are written
LOG_SETTLE_MAX_S = 1.0  # an engine that logs all the time (periodic stats) is not waited for longer


def log_position(process: Any, log: Path) -> int:
    """Where in the session's server.log the next request's lines will start. An attached endpoint's
    log is copied into server.log only at the end, from where it stood at attach (``log_start``)."""
    source = getattr(process, "log_source", None)
    return log_size(log) if source is None else max(0, log_size(source) - process.log_start)


def log_size(log: Path) -> int:
    """Where the lines of the next request will start: the server log's size once it has been quiet for
    LOG_QUIET_S (engines log from their own threads, so a request's last lines may trail its response).
    Called between requests only, never while a run is timed."""
    size = _size(log)
    quiet_since = started = time.monotonic()
    while time.monotonic() - quiet_since < LOG_QUIET_S and time.monotonic() - started < LOG_SETTLE_MAX_S:
        time.sleep(LOG_QUIET_S / 5)
        if (now := _size(log)) != size:
            size, quiet_since = now, time.monotonic()
    return size


def _size(log: Path) -> int:
    try:
        return log.stat().st_size
    except FileNotFoundError:  # an external endpoint without a readable log
        return 0


def redact_log(log: Path, hidden: Hidden, segments: list[dict[str, Any]]) -> None:
    """Replace secret values in the log (as bytes: nothing else changes), and move the recorded segment
    starts by what the replacements before them added or removed."""
    if (hidden.by_name or any(hidden.declared)) and log.exists():
        raw = log.read_bytes()
        redacted = hidden.log(raw)
        if redacted != raw:
            for entry in segments:
                entry["start"] = len(hidden.log(raw[: entry["start"]]))
            atomic_write(log, redacted)


def shadow_of(paths: SessionPaths, path: Path) -> Path:
    return paths.shadow / path.relative_to(paths.failed_root.parent)


def link_log(paths: SessionPaths) -> None:
    """A hard link to the server log, which the server appends to: the link sees everything."""
    link = shadow_of(paths, paths.log)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    # already deleted, or a filesystem without hard links: then only the output itself can be kept
    with contextlib.suppress(OSError):
        os.link(paths.log, link)


def write_evidence(paths: SessionPaths, path: Path, record: dict[str, Any]) -> None:
    """Write an output record, and first the same record into ``paths.shadow`` (from memory: the output
    may be deleted at any time); an orphaned session writes it only where its evidence was moved."""
    if (own := paths.own(path)) != path:
        write_json(own, record)
        return
    shadow = shadow_of(paths, path)
    shadow.parent.mkdir(parents=True, exist_ok=True)
    write_json(shadow, record)
    write_json(path, record)


def keep_for_post_mortem(paths: SessionPaths, error: BaseException, reserve: ErrorReserve) -> Path:
    """Link the session's files into ``failed/<timestamp>/`` (Snakemake deletes the originals next), and the
    traceback into its error.txt first; neither needs free space (a hard link, the reserved error file).
    The folder is named after the attempt (its Slurm job); an orphaned session adds to the folder its
    evidence was moved to, from its own shadow only (the outputs are the next attempt's)."""
    orphaned = paths.claim.kept_in() if paths.claim else None
    kept = orphaned or paths.failed_root / f"{now_stamp()}-{claims.attempt_key()}"
    kept.mkdir(parents=True, exist_ok=True)
    if orphaned:
        with open(kept / "error.txt", "a") as note:
            note.write("\nThe orphaned session itself, when it noticed:\n" + "".join(traceback.format_exception(error)))
    else:
        reserve.write(kept / "error.txt", "".join(traceback.format_exception(error)))
    problems = []
    for path in evidence_of(paths):
        target = kept / path.relative_to(paths.failed_root.parent)
        # the shadow first: Snakemake may delete the output at any moment, even mid-copy
        candidates = (shadow_of(paths, path),) if orphaned else (shadow_of(paths, path), path)
        sources = [s for s in candidates if s.exists()]
        for source in sources:
            try:
                if orphaned:  # its shadow copy replaces what the takeover kept, unless written there since
                    if target.exists() and target.stat().st_mtime >= source.stat().st_mtime:
                        break
                    target.unlink(missing_ok=True)
                keep_copy(source, target)
                break
            except OSError as problem:
                if source is sources[-1]:
                    problems.append(f"{path}: {problem}")
    if problems:
        raise OSError(f"kept in {kept} except {'; '.join(problems)}")
    return kept


def evidence_of(paths: SessionPaths) -> list[Path]:
    """Every file of a session that failed/ keeps: the server log, launch record, runs, load windows."""
    search = [paths.rate_search] if paths.rate_search else []
    return [paths.log, paths.launch, *with_extra_runs(paths.runs), *paths.all_windows(), *search]
