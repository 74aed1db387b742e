"""Server process lifecycle: launch in its own process group, wait until ready, always stop.

Why a process group: engines fork workers (SGLang schedulers, vLLM engine cores), and a
signal to the leader alone orphans them. Every process the server starts shares the
group we create with ``start_new_session=True``, so ``killpg`` reaches all of them.
Why escalate TERM -> TERM -> KILL: llama-server ignores one SIGTERM while a request is in
flight (it hangs in cleanup); the second one makes it exit at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from specsweep.record.atomic import atomic_write

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


class ServerError(RuntimeError):
    """The server failed to start, died or could not be stopped; the message carries its log tail."""


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no server log)"
    return "\n".join(text.splitlines()[-lines:])


LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def exposure_warning(host: str, engine: str) -> str | None:
    """Engines serve without authentication: binding anything but loopback exposes them (and the GPU)
    to whoever can reach the machine. Allowed when the config asks for it, but never silently."""
    if host.lower() in LOOPBACK_NAMES:
        return None
    return (
        f"engines/{engine}/host is {host!r}: the server will accept connections from other machines, "
        f"without authentication; use 127.0.0.1 unless that is intended"
    )


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


def listeners(port: int) -> set[int]:
    """PIDs listening on TCP ``port`` (any address). Sockets of other users' processes show no PID."""
    with contextlib.suppress(psutil.Error):
        return {
            c.pid
            for c in psutil.net_connections("tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid
        }
    return set()


def describe_listeners(port: int) -> str:
    """Who holds ``port``, for an error message (PID and command line where visible)."""
    found = []
    for pid in sorted(listeners(port)):
        with contextlib.suppress(psutil.Error):
            found.append(f"pid {pid} ({' '.join(psutil.Process(pid).cmdline())[:120]})")
    return ", ".join(found) or "a process this user cannot see"


def owns_port(pgid: int, port: int) -> bool:
    """True when a process of group ``pgid`` is the one listening on ``port``.

    Readiness must not be fooled by a stale server answering on the same port while ours
    failed to bind: a 200 from /health only counts when the listener is in our group.
    """
    return bool(listeners(port) & set(group_members(pgid)))


def _die_with_parent() -> None:
    # If the job script itself is SIGKILLed, the server leader gets SIGTERM from the kernel.
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def group_members(pgid: int) -> list[int]:
    """Every live process of a process group (walks the process table, not just the leader)."""
    members = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError, PermissionError):
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                members.append(process.pid)
    return members


def stop_group(pgid: int, grace_s: float, leader: subprocess.Popen[bytes] | None = None) -> list[str]:
    """Stop a whole process group: TERM, wait, TERM, wait, KILL. Returns the signals sent."""
    sent: list[str] = []
    for sig in (signal.SIGTERM, signal.SIGTERM, signal.SIGKILL):
        if not _group_alive(pgid, leader):
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
            sent.append(sig.name)
        deadline = time.monotonic() + (grace_s if sig != signal.SIGKILL else 10.0)
        while time.monotonic() < deadline and _group_alive(pgid, leader):
            time.sleep(0.05)
    if _group_alive(pgid, leader):
        raise ServerError(f"process group {pgid} is still alive after SIGKILL: {group_members(pgid)}")
    return sent


def _group_alive(pgid: int, leader: subprocess.Popen[bytes] | None) -> bool:
    if leader is not None:
        leader.poll()  # reap the leader so it does not linger as a zombie
    return bool(group_members(pgid))


def _created(pid: int) -> float | None:
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).create_time()
    return None


def _is(pid: int, created: float) -> bool:
    """True when ``pid`` is still the process created at ``created`` (a pid, once freed, is reused)."""
    now = _created(pid)
    return now is not None and abs(now - created) < 0.01


@dataclass
class StaleGroup:
    """The processes a job launched, recorded so a later job can stop them if that job was killed.

    Each is recorded exactly, as (pid, creation time): a pid or process group id can be reused by an unrelated
    process, and matching by executable name once stopped someone else's ``python3``."""

    path: Path

    def record(self, pgid: int, argv: list[str]) -> None:
        created = _created(pgid)
        # Written atomically: a crash mid-write must not leave a record that cannot be read.
        atomic_write(
            self.path,
            json.dumps(
                {
                    "pgid": pgid,
                    "executable": os.path.basename(argv[0]),
                    "leader_created": created,
                    "started": time.time(),
                    "processes": [],  # added by track() once the server runs
                }
            )
            + "\n",
        )

    def track(self, pgid: int) -> None:
        """Add every process the launch has started by now (workers, helpers that left the group)."""
        try:
            recorded = json.loads(self.path.read_text())
        except (FileNotFoundError, ValueError):
            return
        known = {tuple(p) for p in recorded.get("processes", [])}
        for pid in launched_processes(pgid, float(recorded.get("started", 0))):
            if (created := _created(pid)) is not None:
                known.add((pid, created))
        recorded["processes"] = sorted(known)
        atomic_write(self.path, json.dumps(recorded) + "\n")

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    def stop_if_running(self, grace_s: float) -> int | None:
        """Stop exactly what was recorded and still runs: the group, if its leader is the recorded one, and every
        recorded process (it may have left the group); return the pgid when anything was stopped."""
        try:
            recorded = json.loads(self.path.read_text())
            pgid = int(recorded["pgid"])
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None
        leader = recorded.get("leader_created")
        ours = [pid for pid, created in recorded.get("processes", []) if _is(int(pid), float(created))]
        group = leader is not None and _is(pgid, float(leader))
        if group:
            stop_group(pgid, grace_s)
        stop_processes(ours, grace_s)
        self.clear()
        return pgid if group or ours else None


def launched_processes(pgid: int, since: float) -> list[int]:
    """Every live process the launch of group ``pgid`` started: its group, the descendants of its leader, and
    the processes orphaned on the way (they come to this process, a child subreaper) created since the launch."""
    found = set(group_members(pgid))
    with contextlib.suppress(psutil.Error):
        found |= {p.pid for p in psutil.Process(pgid).children(recursive=True)}
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if child.create_time() >= since - 0.01 and child.status() != psutil.STATUS_ZOMBIE:
                    found.add(child.pid)
    return sorted(found)


def stop_processes(pids: list[int], grace_s: float) -> None:
    """TERM, then KILL after ``grace_s``, each of ``pids`` (processes that left the server's group)."""
    processes = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            processes.append(psutil.Process(pid))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for process in processes:
            with contextlib.suppress(psutil.Error):
                process.send_signal(sig)
        # reaps those that are this process's children (orphans adopted by the subreaper)
        _gone, processes = psutil.wait_procs(processes, timeout=grace_s if sig == signal.SIGTERM else 10.0)
        processes = [p for p in processes if not _zombie(p)]  # dead, awaiting an init that does not reap them
        if not processes:
            return
    raise ServerError(f"processes still alive after SIGKILL: {[p.pid for p in processes]}")


def _zombie(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:  # gone meanwhile
        return True


def _become_subreaper() -> None:
    """Orphans of the server tree (a wrapper's ``setsid helper &`` whose parent exits) are re-parented to this
    process instead of init, so the walk in ``launched_processes`` still finds them."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1)


class _Terminated(BaseException):
    """Raised from SIGTERM/SIGHUP so that ``finally`` blocks run (they do not for the default action)."""


def _raise_terminated(signum: int, _frame: object) -> None:
    raise _Terminated(f"received {signal.Signals(signum).name}")


@contextlib.contextmanager
def process_group(
    argv: list[str], grace_s: float, on_stopped: Callable[[], None] | None = None, **popen: Any
) -> Iterator[subprocess.Popen[Any]]:
    """Run ``argv`` (never through a shell) in a new process group and stop the whole group on any
    exit: success, exception, SIGINT, SIGTERM or SIGHUP (turned into exceptions here), or the
    death of this process (PDEATHSIG). ``on_stopped`` runs once the group is gone."""
    previous = {s: signal.signal(s, _raise_terminated) for s in (signal.SIGTERM, signal.SIGHUP)}
    _become_subreaper()
    launched_at = time.time()
    try:
        process = subprocess.Popen(argv, start_new_session=True, preexec_fn=_die_with_parent, **popen)
    except BaseException:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        raise
    try:
        yield process
    finally:
        # A second Ctrl-C must not interrupt the teardown half-way.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        try:
            # What left the group (setsid) is found from the launch on, before the group is gone.
            strays = [pid for pid in launched_processes(process.pid, launched_at) if pid != process.pid]
            stop_group(process.pid, grace_s, leader=process)
            stop_processes([pid for pid in strays if psutil.pid_exists(pid)], grace_s)
            if on_stopped is not None:
                on_stopped()
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            for sig, handler in previous.items():
                signal.signal(sig, handler)


@contextlib.contextmanager
def managed_server(
    argv: list[str], env: dict[str, str], log_path: Path, stale: StaleGroup, grace_s: float
) -> Iterator[subprocess.Popen[bytes]]:
    """A server in its own process group, recorded in ``stale`` until the group is stopped."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with (
        open(log_path, "ab") as log,
        process_group(
            argv,
            grace_s,
            on_stopped=stale.clear,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        ) as process,
    ):
        stale.record(process.pid, argv)
        yield process


READY_POLL_S = 0.05


def wait_until_ready(
    process: subprocess.Popen[bytes],
    is_ready: Callable[[], bool],
    timeout_s: float,
    log_path: Path,
    port: int | None = None,
    waiting: Callable[[float], None] | None = None,
) -> float:
    """Poll ``is_ready`` (20 times a second) until it is true; fail fast if the process exits.

    With ``port``, readiness also needs the listener on that port to be in the server's own
    process group, so a stale server on the same port cannot pass for ours. ``waiting`` is called
    with the seconds waited so far on every poll (progress lines while a model loads).
    """
    started = time.monotonic()
    while True:
        if process.poll() is not None:
            raise ServerError(
                f"the server exited with {exit_description(process.returncode)} before it was "
                f"ready; last lines of {log_path}:\n{log_tail(log_path)}"
            )
        if is_ready() and (port is None or owns_port(process.pid, port)):
            return time.monotonic() - started
        if waiting is not None:
            waiting(time.monotonic() - started)
        if time.monotonic() - started > timeout_s:
            raise ServerError(
                f"the server was not ready after {timeout_s:.0f} s (benchmark.ready_timeout_s); "
                f"last lines of {log_path}:\n{log_tail(log_path)}"
            )
        # Start-up only (nothing is measured yet): 50 ms wastes 25 ms a session on average where 250 ms
        # wasted 125 ms, for a /health request that costs the server microseconds (the pipeline's overhead).
        time.sleep(READY_POLL_S)


def exit_description(returncode: int | None) -> str:
    """``status 1`` or ``signal SIGKILL`` (Popen reports death by signal N as -N)."""
    if returncode is not None and returncode < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-returncode).name}"
    return f"status {returncode}"
