"""Faults of a sweep under Slurm, on the stand-in engine: cancellation, time limit, an engine that does
not start, a node without the project's software.

Each fault must stop the engine's whole process group on the node, keep the evidence in
results/<cfg>/failed/<time>/, reach the user's console (not only a Slurm log file), and leave a
sweep that a rerun completes, measuring only what is missing.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

from conftest import (
    failed_dirs,
    launch_record,
    processes_running,
    run_slurm,
    slurm_job_ids,
    slurm_snakemake_argv,
    squeue_ids,
    standin_env,
    standin_sweep,
    start_slurm,
    wait_for,
)

from specsweep.engines.server import group_members


def planned_jobs(text: str) -> dict[str, int]:
    """The job-stats table Snakemake prints: rule -> count."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", text, flags=re.M)}


def hanging_victim(workdir: Path) -> dict[str, dict]:
    """A baseline and a configuration whose server never becomes ready while workdir/fault-on exists."""
    (workdir / "fault-on").touch()
    return {
        "base": {"baseline": True},
        "victim": {
            "env": {
                "STANDIN_MODE": "hang-before-ready",
                "STANDIN_ONLY_IF": str(workdir / "fault-on"),
                "STANDIN_STARTED": str(workdir / "victim-started"),
            }
        },
    }


def victim_running(workdir: Path) -> int | None:
    """The Slurm job id of the victim's session once its server listens on the node."""
    if not (workdir / "victim-started").exists():
        return None
    logs = (workdir / ".snakemake" / "slurm_logs" / "rule_bench" / "victim").glob("*.log")
    return max((int(log.stem) for log in logs), default=None)  # the latest submission


def assert_stopped_and_kept(workdir: Path, exe: Path, reason: str, kept_before: int) -> None:
    """The engine group is gone from the node; a new failed/<time>/ holds the launch record and the error."""
    assert wait_for(lambda: not processes_running(exe), 15), "the stand-in engine survived on the node"
    # the session copies its evidence after stopping the engine: give it a moment
    assert wait_for(
        lambda: (
            len(failed_dirs(workdir, "victim")) > kept_before
            and (failed_dirs(workdir, "victim")[-1] / "error.txt").exists()
        ),
        15,
    )
    kept = failed_dirs(workdir, "victim")
    assert len(kept) == kept_before + 1, kept
    assert (kept[-1] / "launch.json").exists()
    assert reason in (kept[-1] / "error.txt").read_text()
    pid = json.loads((kept[-1] / "launch.json").read_text())["pid"]
    assert pid and group_members(pid) == []


def test_ctrl_c_then_scancel_stop_the_engine_keep_the_evidence_and_a_rerun_completes(standin_workdir):
    workdir = standin_workdir
    exe = standin_sweep(workdir, hanging_victim(workdir))

    # 1. Ctrl-C of snakemake while the victim's server runs on the node: the plugin cancels its jobs.
    snakemake = start_slurm(workdir, "all", console_name="console-ctrl-c.txt")
    job = wait_for(lambda: victim_running(workdir), 180)
    assert job, (workdir / "console-ctrl-c.txt").read_text()[-3000:]
    snakemake.send_signal(signal.SIGINT)
    assert snakemake.wait(120) != 0
    assert wait_for(lambda: job not in squeue_ids(), 30), f"Slurm job {job} still queued after Ctrl-C"
    assert_stopped_and_kept(workdir, exe, "SIGTERM", kept_before=0)

    # 2. scancel of the running measuring job: Snakemake reports it, the rest of the sweep finishes.
    (workdir / "victim-started").unlink()
    snakemake = start_slurm(workdir, "--keep-going", "all")
    job = wait_for(lambda: victim_running(workdir), 180)
    assert job, (workdir / "console.txt").read_text()[-3000:]
    subprocess.run(["scancel", str(job)], check=True)
    assert snakemake.wait(300) != 0
    console = (workdir / "console.txt").read_text()
    assert f"SLURM-job '{job}' failed, SLURM status is: 'CANCELLED'" in console
    assert "victim: FAILED (received SIGTERM)" in console
    assert "victim: partial results kept in results/victim/failed/" in console
    assert_stopped_and_kept(workdir, exe, "SIGTERM", kept_before=1)

    # 3. The fault gone, a rerun measures only the victim and completes the sweep.
    (workdir / "fault-on").unlink()
    rerun = run_slurm(workdir, "all")
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    assert planned_jobs(rerun.stdout + rerun.stderr).get("bench") == 1
    assert slurm_job_ids(rerun.stdout + rerun.stderr).get("victim")
    summary = (workdir / "results" / "summary.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in summary[1:]] == ["base", "victim"]
    assert all(",ok," in line for line in summary[1:])
    assert len(failed_dirs(workdir, "victim")) == 2
    assert not processes_running(exe)


def test_time_limit_and_an_engine_that_does_not_start_reach_the_console(standin_workdir):
    workdir = standin_workdir
    (workdir / "fault-on").touch()
    exe = standin_sweep(
        workdir,
        {
            "base": {"baseline": True},
            "slow": {"env": {"STANDIN_MODE": "hang-before-ready"}},
            "broken": {"env": {"STANDIN_MODE": "exit-at-start"}},
        },
        runtime_min=1,
    )
    done = run_slurm(workdir, "--keep-going", "all")
    console = done.stdout + done.stderr
    assert done.returncode != 0
    jobs = slurm_job_ids(console)
    assert set(jobs) >= {"base", "slow", "broken", "llama"}, jobs

    # Time limit: Slurm signals the job step (TERM, then KILL after KillWait); the session stops its engine.
    assert f"SLURM-job '{jobs['slow'][0]}' failed, SLURM status is: 'TIMEOUT'" in console
    assert "slow: FAILED (received SIGTERM)" in console
    slow_kept = failed_dirs(workdir, "slow")
    assert len(slow_kept) == 1 and "SIGTERM" in (slow_kept[0] / "error.txt").read_text()

    # An engine that exits at start: its own error line is on the user's console.
    assert "broken: FAILED (the server exited" in console
    assert "error: failed to load model (exit-at-start)" in console
    assert len(failed_dirs(workdir, "broken")) == 1

    # The rest of the sweep finished, and the partial summary lists what failed.
    assert launch_record(workdir, "base")["status"] == "completed"
    assert launch_record(workdir, "base")["placement"]["slurm_job_id"] == str(jobs["base"][0])
    assert not processes_running(exe)


def test_a_node_without_the_project_says_so_on_the_console(standin_workdir, tmp_path_factory):
    """The node's Python cannot import specsweep (its venv lacks the project): a clear message, not a
    traceback deep in a Slurm log. Simulated with a venv whose path to the project's source is taken
    away after submission, while the job waits for the node."""
    workdir = standin_workdir
    standin_sweep(workdir, {"base": {"baseline": True}})
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(
        subprocess.run(
            [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    import specsweep

    project = site / "project.pth"
    project.write_text(f"{Path(specsweep.__file__).parents[1]}\n")
    (site / "deps.pth").write_text(f"{sysconfig.get_path('purelib')}\n")
    # The node is taken by another job, so the sweep's jobs wait until the project has gone.
    holder = subprocess.run(
        ["sbatch", "--parsable", "--exclusive", "-t", "2", "-o", "/dev/null", "-D", str(workdir), "--wrap", "sleep 25"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        argv = [str(venv / "bin" / "python"), *slurm_snakemake_argv(workdir, "all")[1:]]
        with open(workdir / "console.txt", "w") as console:
            snakemake = subprocess.Popen(
                argv, stdout=console, stderr=subprocess.STDOUT, text=True, env=standin_env(workdir)
            )
            submitted = wait_for(lambda: "submitted with SLURM jobid" in (workdir / "console.txt").read_text(), 120)
            project.unlink()  # the job still waits for the node: when it starts, the project is gone
            assert submitted, (workdir / "console.txt").read_text()[-3000:]
            assert snakemake.wait(300) != 0
    finally:
        subprocess.run(["scancel", holder], capture_output=True)
    out = (workdir / "console.txt").read_text()
    assert "specsweep: a job failed on its node: specsweep cannot be imported by" in out, out[-4000:]
    assert "Every node needs the project's environment at the same path" in out
