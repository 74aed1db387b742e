"""One attempt owns a configuration's folder (measure/claim.py): a second attempt refuses while the
holder runs, takes over from one whose node failed, was requeued or whose process ended, and keeps the
orphan's evidence in failed/<time>-<holder>/; the orphan then writes only there."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specsweep.measure import claim as claims
from specsweep.measure.progress import SessionProgress
from specsweep.record.atomic import write_json


def holder_claim(folder: Path, **holder) -> None:
    attempt = claims.Attempt(**{"host": socket.gethostname(), "pid": 1, "since": "then", **holder})
    write_json(folder / claims.CLAIM, {**holder, **attempt.__dict__, "key": attempt.key, "label": attempt.label})


def orphan_evidence(folder: Path, key: str) -> list[Path]:
    """An orphan's outputs (run 1 deleted, as Snakemake does, but still in the orphan's shadow)."""
    shadow = folder / f".session-{key}"
    for base in (folder, shadow):
        (base / "runs").mkdir(parents=True)
        write_json(base / "launch.json", {"status": "ready"})
        write_json(base / "runs" / "run_0.json", {"run": 0})
    write_json(shadow / "runs" / "run_1.json", {"run": 1})
    return [
        folder / "launch.json",
        folder / "server.log",
        folder / "runs" / "run_0.json",
        folder / "runs" / "run_1.json",
    ]


@pytest.fixture
def no_slurm(monkeypatch):
    for name in ("SLURM_JOB_ID", "SLURM_RESTART_COUNT", "SLURMD_NODENAME"):
        monkeypatch.delenv(name, raising=False)


def fake_slurm(tmp_path: Path, monkeypatch, squeue: str, sinfo: str) -> None:
    """squeue and sinfo on PATH answering as a controller would."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    for name, out in (("squeue", squeue), ("sinfo", sinfo)):
        (bin_dir / name).write_text(f"#!/bin/sh\necho '{out}'\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_a_live_holder_on_this_host_is_refused_with_its_pid(tmp_path, no_slurm):
    holder_claim(tmp_path, pid=os.getppid())
    with pytest.raises(claims.ClaimHeld, match=f"pid {os.getppid()} on {socket.gethostname()}.*kill {os.getppid()}"):
        claims.take(tmp_path, [], SessionProgress("cfg", io.StringIO()))


def test_a_holder_whose_process_ended_is_taken_over_and_its_runs_kept(tmp_path, no_slurm):
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(ended.stdout)
    holder_claim(tmp_path, pid=pid)
    key = f"{socket.gethostname()}-pid{pid}"
    evidence = orphan_evidence(tmp_path, key)
    console = io.StringIO()
    claim = claims.take(tmp_path, evidence, SessionProgress("cfg", console))
    try:
        (kept,) = (tmp_path / "failed").iterdir()
        assert kept.name.endswith(f"-{key}")
        assert sorted(p.name for p in (kept / "runs").iterdir()) == ["run_0.json", "run_1.json"]  # the shadow's too
        assert f"pid {pid}" in (kept / "error.txt").read_text() and "has ended" in (kept / "error.txt").read_text()
        assert "2 finished run(s)" in console.getvalue() and str(kept) in console.getvalue()
        assert json.loads((tmp_path / claims.CLAIM).read_text())["key"] == claim.attempt.key
        assert "re-measured after a failed attempt" in claims.replaced_warning(claim)
        assert str(kept) in claims.replaced_warning(claim)
    finally:
        claim.release()
    assert not (tmp_path / claims.CLAIM).exists()


def test_a_slurm_job_on_a_failed_node_is_taken_over_saying_the_node_failed(tmp_path, monkeypatch, no_slurm):
    fake_slurm(tmp_path, monkeypatch, squeue="NODE_FAIL node1", sinfo="down*|node loss test")
    holder_claim(tmp_path, host="node1", job="13", pid=4242)
    monkeypatch.setenv("SLURM_JOB_ID", "14")
    monkeypatch.setenv("SLURMD_NODENAME", "node2")
    console = io.StringIO()
    claim = claims.take(tmp_path, orphan_evidence(tmp_path, "job13"), SessionProgress("cfg", console))
    claim.release()
    assert "node node1 failed (down* (node loss test)) while Slurm job 13 measured there" in console.getvalue()
    assert "(Slurm job 14 pid" in console.getvalue() and "on node2)" in console.getvalue()
    (kept,) = (tmp_path / "failed").iterdir()
    assert kept.name.endswith("-job13")


def test_a_running_slurm_job_on_a_healthy_node_is_refused_with_scancel(tmp_path, monkeypatch, no_slurm):
    fake_slurm(tmp_path, monkeypatch, squeue="RUNNING node1", sinfo="allocated|none")
    holder_claim(tmp_path, host="node1", job="13", pid=4242)
    monkeypatch.setenv("SLURM_JOB_ID", "14")
    with pytest.raises(claims.ClaimHeld, match=r"Slurm job 13 pid 4242 on node1 .*scancel 13"):
        claims.take(tmp_path, [], SessionProgress("cfg", io.StringIO()))


def test_a_requeued_job_takes_over_from_its_own_earlier_run(tmp_path, monkeypatch, no_slurm):
    fake_slurm(tmp_path, monkeypatch, squeue="RUNNING node2", sinfo="allocated|none")  # Slurm: it runs (again)
    holder_claim(tmp_path, host="node1", job="13", pid=4242)
    monkeypatch.setenv("SLURM_JOB_ID", "13")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    console = io.StringIO()
    claims.take(tmp_path, [], SessionProgress("cfg", console)).release()
    assert "Slurm requeued job 13 (restart 1): the earlier run of it was orphaned" in console.getvalue()


def test_the_orphan_notices_the_take_over_and_writes_only_where_its_evidence_went(tmp_path, no_slurm):
    orphan = claims.take(tmp_path, [], SessionProgress("cfg", io.StringIO()))
    orphan.check()  # still its own
    assert orphan.redirect(tmp_path / "runs" / "run_3.json") == tmp_path / "runs" / "run_3.json"
    # a newer attempt elsewhere takes the folder over, moving the orphan's evidence to failed/
    kept = tmp_path / "failed" / f"20260101T000000Z-{orphan.attempt.key}"
    newer = claims.Attempt(host="elsewhere", pid=7, job="99")
    write_json(
        tmp_path / claims.CLAIM,
        {
            **newer.__dict__,
            "key": newer.key,
            "label": newer.label,
            "replaced": {"key": orphan.attempt.key, "kept": str(kept)},
        },
    )
    with pytest.raises(claims.ClaimLost, match=f"taken over by Slurm job 99 pid 7 on elsewhere.*kept in {kept}"):
        orphan.check()
    assert orphan.redirect(tmp_path / "runs" / "run_3.json") == kept / "runs" / "run_3.json"
    orphan.release()
    assert (tmp_path / claims.CLAIM).exists()  # the newer attempt's claim is not the orphan's to remove


def test_an_orphan_stops_every_snakemake_that_would_delete_the_new_attempts_outputs(tmp_path):
    """claim.abandon: SIGKILL of each Snakemake above the job (under Slurm the job's, which runs the step
    with srun and cleans up after it, and the step's), outermost first, so that no clean-up of a failed
    job's outputs runs."""
    step = tmp_path / "step" / "snakemake"
    step.parent.mkdir()
    step.write_text(
        f"#!/bin/sh\n{sys.executable} -c 'from specsweep.measure import claim; print(claim.abandon(), flush=True)'\n"
        "sleep 30\necho the step cleaned up the outputs\n"
    )
    job = tmp_path / "snakemake"
    job.write_text(f"#!/bin/sh\n{step}\necho the job cleaned up the outputs\nsleep 30\n")
    for script in (step, job):
        script.chmod(0o755)
    done = subprocess.run([str(job)], capture_output=True, text=True, timeout=20)
    assert done.returncode == -9, done
    assert "cleaned up" not in done.stdout
    stopped = json.loads(done.stdout.split("\n")[0])
    assert len(stopped) == 2  # the job's Snakemake first, then the step's


def test_an_orphan_whose_taker_already_finished_still_knows_it_lost(tmp_path, no_slurm):
    """The taker released its claim (it finished) before the orphan's next check: no claim at all is a loss
    too, and the orphan writes into the folder its evidence was moved to (seen on the two-node cluster)."""
    orphan = claims.take(tmp_path, [], SessionProgress("cfg", io.StringIO()))
    moved = tmp_path / "failed" / f"20260101T000000Z-{orphan.attempt.key}"
    moved.mkdir(parents=True)
    (tmp_path / claims.CLAIM).unlink()  # taken over, measured, released
    with pytest.raises(claims.ClaimLost, match="a later attempt"):
        orphan.check()
    assert orphan.redirect(tmp_path / "launch.json") == moved / "launch.json"
    orphan.release()


def test_a_session_whose_job_is_node_fail_kills_its_batch_snakemake_and_measures_on(tmp_path, monkeypatch):
    """The batch script's Snakemake (not above the session: srun ran the step) would remove the job's outputs
    a latency-wait after srun failed at the node failure: the heartbeat kills it as soon as Slurm says
    NODE_FAIL. A Snakemake of another job is left alone; the claim stays the session's."""
    fake_slurm(tmp_path, monkeypatch, squeue="NODE_FAIL node1", sinfo="down*|node-loss test")
    monkeypatch.setattr(claims, "HEARTBEAT_S", 0.05)
    batch, other = (
        subprocess.Popen(["bash", "-c", "exec -a snakemake sleep 30"], env={**os.environ, "SLURM_JOB_ID": job})
        for job in ("4242", "4243")
    )
    for process in (batch, other):  # until bash has exec'd into "snakemake"
        while not Path(f"/proc/{process.pid}/cmdline").read_bytes().startswith(b"snakemake\0"):
            time.sleep(0.01)
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    progress = io.StringIO()
    claim = claims.take(tmp_path, [], SessionProgress("cfg", progress))
    try:
        assert batch.wait(timeout=10) == -9
        assert other.poll() is None
        assert f"cfg: Slurm reports job 4242 NODE_FAIL: stopped its batch script's Snakemake (pid {batch.pid})" in (
            progress.getvalue()
        )
        claim.check()  # not taken over: the session measures on
    finally:
        claim.release()
        for process in (batch, other):
            process.kill()
            process.wait()


def test_a_live_sessions_server_is_not_stopped_by_a_second_sweep_sharing_its_results(tmp_path, no_slurm, monkeypatch):
    # two working folders sharing one results/: the second sweep's job found the first's server.pgid and stopped
    # its live server as "left behind by an interrupted job" before the claim check refused it
    from specsweep.engines.base import EngineResources
    from specsweep.engines.llamacpp import LlamaCpp
    from specsweep.engines.server import StaleGroup
    from specsweep.measure.session import Session, SessionPaths, measure
    from specsweep.plan.config import Configuration

    monkeypatch.setenv("SPECSWEEP_LOCK_DIR", str(tmp_path / "locks"))
    folder = tmp_path / "results" / "cfg"
    folder.mkdir(parents=True)
    server = subprocess.Popen(["sleep", "60"], start_new_session=True)  # the first sweep's server, serving
    try:
        StaleGroup(folder / "server.pgid").record(server.pid, ["llama-server"])
        holder_claim(folder, pid=os.getppid())  # the first sweep's session, alive on this host
        paths = SessionPaths(
            folder / "server.log", folder / "launch.json", [], folder / "server.pgid", folder / "failed"
        )
        configuration = Configuration("cfg", "llama", "llamacpp", True, {}, {}, group="cfg")
        engine = LlamaCpp({"kind": "llamacpp"}, EngineResources(executable="/bin/false", model="/dev/null"))
        benchmark = {"stop_grace_s": 1, "runs": 1}
        progress = io.StringIO()
        with pytest.raises(claims.ClaimHeld):
            measure(Session(configuration, engine, benchmark, [], "127.0.0.1", 0, paths), progress)
        assert server.poll() is None, progress.getvalue()  # still serving the first sweep
        assert "left behind" not in progress.getvalue()
        assert (folder / "server.pgid").exists()
    finally:
        server.kill()
        server.wait()
