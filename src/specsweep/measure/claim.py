"""One attempt owns a configuration's results folder at a time: ``results/<cfg>/claim.json``.

On a cluster a session can be orphaned: its node fails (its slurmd dies, the node is marked down),
Slurm reports the job failed (``NODE_FAIL``) or requeues it, while the session on that node goes on
measuring and writing. A second attempt of the same configuration (the rerun, or Slurm's requeue)
must then neither write beside it nor throw away what it finished. So each session claims the folder
(holder: node, Slurm job and restart count, pid, since when) and touches a heartbeat while it runs.
A second attempt that finds the claim asks whether its holder still runs (Slurm: the job's state and
its node's; this host: the pid; elsewhere: the heartbeat) and

- refuses to start while it does (the message names the holder and how to stop it), or
- takes the folder over: the orphan's evidence (its shadow copies first, as Snakemake may have deleted
  the outputs) goes to ``failed/<time>-<holder>/`` with an ``error.txt`` saying why, and the new claim
  records what it replaced, which the session repeats in its launch record's warnings (summary.csv).

The orphan notices the loss at its next write or request (``lost``): from then on it writes nothing
under the configuration's folder but into the folder it was moved to (``redirect``), and stops.

Its job's Snakemake must not delete anything either. The batch script's Snakemake, on the same node,
sees srun fail at the node failure and, a ``latency-wait`` later, removes the job's outputs, which by
then may be the new attempt's. So the heartbeat asks Slurm for its own job's state (one ``squeue`` per
heartbeat, under Slurm only) and, once the job is ``NODE_FAIL``, kills that Snakemake at once
(``Claim._stop_job_snakemake``), well within the latency-wait; the session itself measures on until it is
taken over, as its runs are still evidence.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from specsweep.measure import cluster
from specsweep.measure.progress import SessionProgress
from specsweep.record.atomic import keep_copy, write_json
from specsweep.record.clock import now_iso, now_stamp

CLAIM = "claim.json"
# How a launch record's warning (summary.csv) starts when its session replaced an orphaned attempt.
REMEASURED = "re-measured after a failed attempt"
HEARTBEAT_S = 10.0
# A holder on another machine without a scheduler to ask: presumed gone after this long without a heartbeat.
STALE_AFTER_S = 120.0


class ClaimHeld(RuntimeError):
    """Another attempt that still runs owns the configuration."""


class ClaimLost(RuntimeError):
    """This attempt's configuration was taken over by a newer attempt (this one was orphaned)."""


@dataclass(frozen=True)
class Attempt:
    """Who measures: the node, the Slurm job (and how often Slurm restarted it), the process."""

    host: str
    pid: int
    job: str | None = None
    restart: int = 0
    since: str = ""

    @classmethod
    def this(cls) -> Attempt:
        return cls(
            host=this_node(),
            pid=os.getpid(),
            job=os.environ.get("SLURM_JOB_ID"),
            restart=int(os.environ.get("SLURM_RESTART_COUNT") or 0),
            since=now_iso(),
        )

    @property
    def key(self) -> str:
        """A name for this attempt in file names: ``job13`` (``job13.r1`` once requeued), else ``<host>-pid<pid>``."""
        if self.job:
            return f"job{self.job}" + (f".r{self.restart}" if self.restart else "")
        return f"{self.host}-pid{self.pid}"

    @property
    def label(self) -> str:
        where = f"Slurm job {self.job}" + (f" (restart {self.restart})" if self.restart else "") if self.job else ""
        return f"{where + ' ' if where else ''}pid {self.pid} on {self.host}"


def this_node() -> str:
    """The node this process runs on: Slurm's name for it, else the hostname."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def attempt_key() -> str:
    """This process's attempt key (stable for the process: Slurm's variables do not change under it)."""
    return Attempt.this().key


@dataclass
class Claim:
    """This attempt's claim on ``folder`` (results/<cfg>/)."""

    folder: Path
    attempt: Attempt
    replaced: dict[str, Any] | None = None
    progress: SessionProgress | None = field(default=None, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _kept: Path | None = field(default=None, repr=False)

    @property
    def path(self) -> Path:
        return self.folder / CLAIM

    def heartbeat(self) -> Path:
        return self.folder / f".alive-{self.attempt.key}"

    def holder(self) -> dict[str, Any] | None:
        return read_claim(self.folder)

    def lost(self) -> dict[str, Any] | None:
        """The claim that replaced this one, when a newer attempt took the folder over; else None."""
        current = self.holder()
        if current is None:  # only a later attempt removes this attempt's claim: when it has finished
            return {"label": "a later attempt (finished, its claim released)", "since": "?", "replaced": None}
        if current.get("key") == self.attempt.key:
            return None
        return current

    def kept_in(self) -> Path | None:
        """Where this attempt's evidence was moved by the attempt that took over (None while it holds the claim)."""
        if self._kept is None:
            current = self.lost()
            if current is None:
                return None
            replaced = current.get("replaced") or {}
            mine = replaced.get("key") == self.attempt.key and replaced.get("kept")
            moved = sorted((self.folder / "failed").glob(f"*-{self.attempt.key}"))  # where the taker put it
            self._kept = (
                Path(mine)
                if mine
                else moved[-1]
                if moved
                else self.folder / "failed" / f"{now_stamp()}-{self.attempt.key}"
            )
        return self._kept

    def redirect(self, path: Path) -> Path:
        """Where this attempt may write ``path`` (a file under the folder): itself while it holds the claim,
        else the same name in the folder its evidence was moved to."""
        kept = self.kept_in()
        return path if kept is None else kept / Path(path).relative_to(self.folder)

    def check(self) -> None:
        """Raise ClaimLost when a newer attempt took the folder over."""
        if (current := self.lost()) is not None:
            raise ClaimLost(
                f"{self.folder} was taken over by {current.get('label')} at {current.get('since')} "
                f"(this session, {self.attempt.label}, was presumed gone); this session stops and its "
                f"evidence is kept in {self.kept_in()}"
            )

    def release(self) -> None:
        self._stop.set()
        self.heartbeat().unlink(missing_ok=True)
        if self.lost() is None:
            self.path.unlink(missing_ok=True)

    def _beat(self) -> None:
        job_failed = False
        while not self._stop.wait(HEARTBEAT_S):
            if self.lost() is not None:
                return
            self.heartbeat().touch()
            if self.attempt.job and not job_failed and (found := cluster.job_state(self.attempt.job)):
                job_failed = found[0] == "NODE_FAIL"
                if job_failed:
                    self._stop_job_snakemake()

    def _stop_job_snakemake(self) -> None:
        """SIGKILL this job's batch Snakemake (see the module doc), saying so on the session's console."""
        from specsweep.measure.job_guard import job_snakemakes

        stopped = job_snakemakes(str(self.attempt.job))
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.progress is not None:
            self.progress.node_failed(str(self.attempt.job), stopped)


def read_claim(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / CLAIM).read_text())
    except (OSError, ValueError):
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def why_gone(holder: dict[str, Any], mine: Attempt, folder: Path) -> str | None:
    """Why the holder of a claim no longer runs (a node failure, a requeue, its process gone), or None
    while it may still run."""
    job = holder.get("job")
    if job:
        if job == mine.job and int(holder.get("restart") or 0) < mine.restart:
            return f"Slurm requeued job {job} (restart {mine.restart}): the earlier run of it was orphaned"
        found = cluster.job_state(job)
        if found is not None:
            state, node = found
            node = node or holder.get("host")
            node_state = cluster.node_state(node) if node else None
            if node_state and cluster.node_failed(node_state):
                return f"node {node} failed ({node_state}) while Slurm job {job} measured there (job state {state})"
            if state in cluster.JOB_ENDED:
                why = "node failure" if state == "NODE_FAIL" else "ended"
                return f"Slurm job {job} on {holder.get('host')} is {state} ({why}) while it held the claim"
            return None
        # no scheduler to ask here: fall through to the heartbeat
    elif holder.get("host") == this_node():
        if not _pid_alive(int(holder.get("pid") or 0)):
            return f"its process (pid {holder.get('pid')} on {holder.get('host')}) has ended"
        return None
    beat = folder / f".alive-{holder.get('key')}"
    try:
        age = time.time() - beat.stat().st_mtime
    except OSError:
        age = time.time() - (folder / CLAIM).stat().st_mtime
    if age > STALE_AFTER_S:
        return f"no heartbeat from {holder.get('label')} for {age:.0f} s"
    return None


def take(folder: Path, evidence: list[Path], progress: SessionProgress) -> Claim:
    """Claim ``folder`` for this attempt; take it over from a holder that no longer runs (its ``evidence``
    files, and their shadow copies, kept in ``failed/<time>-<holder>/``); raise ClaimHeld while it runs."""
    mine = Attempt.this()
    claim = Claim(folder, mine, progress=progress)
    holder = read_claim(folder)
    if holder is not None and holder.get("key") != mine.key:
        why = why_gone(holder, mine, folder)
        if why is None:
            raise ClaimHeld(
                f"{folder} is being measured by {holder.get('label')} since {holder.get('since')}; two sessions "
                f"must not write one configuration: wait for it to end"
                + (
                    f" or stop it (scancel {holder['job']})"
                    if holder.get("job")
                    else f" or stop it (kill {holder.get('pid')})"
                )
            )
        kept, finished = _keep_orphan(folder, holder, evidence, why)
        claim.replaced = {**holder, "why": why, "kept": str(kept), "finished_runs": finished, "at": now_iso()}
        progress.taken_over(why, finished, kept, mine.label)
    folder.mkdir(parents=True, exist_ok=True)
    write_json(claim.path, {**asdict(mine), "key": mine.key, "label": mine.label, "replaced": claim.replaced})
    claim.heartbeat().touch()
    threading.Thread(target=claim._beat, name=f"claim-{mine.key}", daemon=True).start()
    return claim


def _keep_orphan(folder: Path, holder: dict[str, Any], evidence: list[Path], why: str) -> tuple[Path, int]:
    """The orphan's files into failed/<time>-<holder key>/: its shadow copy of each (written from memory,
    never deleted by Snakemake) else the output itself; return the folder and its finished runs."""
    kept = folder / "failed" / f"{now_stamp()}-{holder.get('key')}"
    shadow = folder / f".session-{holder.get('key')}"
    finished = 0
    for path in evidence:
        relative = Path(path).relative_to(folder)
        for source in (shadow / relative, Path(path)):
            if source.is_file():
                keep_copy(source, kept / relative)
                finished += relative.parts[0] == "runs"
                break
    kept.mkdir(parents=True, exist_ok=True)
    (kept / "error.txt").write_text(
        f"{why}.\nThe session of {holder.get('label')} (since {holder.get('since')}) was orphaned; a new attempt "
        f"took over {folder} at {now_iso()} and measures the configuration again.\n"
    )
    (folder / f".alive-{holder.get('key')}").unlink(missing_ok=True)
    return kept, finished


def replaced_warning(claim: Claim) -> str | None:
    """The launch record's warning (summary.csv ``warnings``) when this attempt re-measures an orphaned one."""
    if not claim.replaced:
        return None
    replaced = claim.replaced
    runs, kept = replaced["finished_runs"], replaced["kept"]
    return f"{REMEASURED}: {replaced['why']}; its {runs} finished run(s) are kept in {kept}"


def orphaned(folder: Path) -> str | None:
    """Why the attempt that holds ``folder``'s claim no longer runs (its node failed, its job ended) while
    its claim stands: what the console says about a configuration whose job was lost; else None."""
    holder = read_claim(folder)
    if holder is None or not holder.get("job"):  # a local session releases its claim when it fails
        return None
    return why_gone(holder, Attempt.this(), folder)


def abandon() -> list[int]:
    """An orphan that lost its configuration: SIGKILL every Snakemake above this job (return their pids),
    outermost first, so that none deletes the job's outputs on its way out: they are the new attempt's now
    (the orphan's own evidence is already in failed/). Under Slurm there are two: the job's, which runs
    the step with srun and cleans up when the step fails, and the step's. Its job has failed anyway."""
    from specsweep.measure.job_guard import snakemake_ancestors

    stopped = list(reversed(snakemake_ancestors()))
    for pid in stopped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return stopped
