"""A real single-host Slurm cluster (Debian's slurm-wlm and munge) for the cluster tests.

The session fixture installs it on first use (apt-get, as root, as CI runs), starts munged, slurmctld
and slurmd, and stops them when the session ends. If it cannot, every test here fails: a cluster test
that is skipped proves nothing.
"""

from __future__ import annotations

import fcntl
import functools
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import support
import yaml
from support import REPO, kill_all

CLUSTER = Path(__file__).with_name("cluster.sh")
PROFILE = REPO / "profiles" / "slurm"
# (tests/conftest.py marks every test here `slurm`)


# Under pytest-xdist several workers run cluster tests (one lane each, tests/schedule.py), all on one
# cluster: the first to arrive starts it, each holds a shared lock while it uses it, and the last one
# to leave stops it, if this test run started it (another run, or the user, may be using a cluster
# that was already up).
SETUP_LOCK = Path("/run/lock/specsweep-test-slurm.setup")
USERS_LOCK = Path("/run/lock/specsweep-test-slurm.users")
STARTED_BY = Path("/run/lock/specsweep-test-slurm.started-by")


def _test_run() -> str:
    """This test run: xdist's id, shared by its workers; else this process."""
    return os.environ.get("PYTEST_XDIST_TESTRUNUID", f"pid-{os.getpid()}")


@pytest.fixture(scope="session", autouse=True)
def slurm_cluster():
    with open(SETUP_LOCK, "a") as setup:
        fcntl.flock(setup, fcntl.LOCK_EX)
        # (a second worker of this run never runs `up` again: a lane may have a node down on purpose)
        if not (STARTED_BY.exists() and STARTED_BY.read_text().startswith(f"{_test_run()} ")):
            running_before = subprocess.run(["sh", str(CLUSTER), "status"], capture_output=True).returncode == 0
            up = subprocess.run(["sh", str(CLUSTER), "up"], capture_output=True, text=True, timeout=900)
            if up.returncode != 0:
                pytest.fail(
                    f"could not set up the test Slurm cluster (tests/slurm/cluster.sh up, needs root and "
                    f"apt-get):\n{up.stdout}\n{up.stderr}",
                    pytrace=False,
                )
            STARTED_BY.write_text(f"{_test_run()} {'found' if running_before else 'started'}")
        users = open(USERS_LOCK, "a")  # noqa: SIM115 (open for the whole session: its lock is the use)
        fcntl.flock(users, fcntl.LOCK_SH)
    yield
    with open(SETUP_LOCK, "a") as setup:
        fcntl.flock(setup, fcntl.LOCK_EX)
        fcntl.flock(users, fcntl.LOCK_UN)
        try:
            fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no other worker uses it any more
        except BlockingIOError:
            return
        finally:
            users.close()
        if STARTED_BY.exists() and STARTED_BY.read_text() == f"{_test_run()} started":
            STARTED_BY.unlink()
            down = subprocess.run(["sh", str(CLUSTER), "down"], capture_output=True, text=True, timeout=120)
            assert down.returncode == 0, down.stderr


def slurm_snakemake_argv(workdir: Path, *args: str) -> list[str]:
    """`snakemake --profile profiles/slurm ...` as a user types it (status checks from 3 s, not 40 s)."""
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--profile",
        str(PROFILE),
        "--directory",
        str(workdir),
        "--slurm-init-seconds-before-status-checks",
        "3",
        *args,
        "--configfile",
        str(workdir / "config.yaml"),
    ]


def standin_env(workdir: Path) -> dict[str, str]:
    """A stand-in sweep's own cache, hence its own measuring lock: it does not wait for real measurements
    (Slurm exports this environment to the jobs)."""
    return {**os.environ, "SPECSWEEP_CACHE": str(workdir / "cache")}


def run_slurm(workdir: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        slurm_snakemake_argv(workdir, *args), capture_output=True, text=True, timeout=timeout, env=standin_env(workdir)
    )


def start_slurm(workdir: Path, *args: str, console_name: str = "console.txt") -> subprocess.Popen[str]:
    """Snakemake in the background, its console in workdir/<console_name>."""
    with open(workdir / console_name, "w") as console:  # the child keeps its own descriptor
        return subprocess.Popen(
            slurm_snakemake_argv(workdir, *args),
            stdout=console,
            stderr=subprocess.STDOUT,
            text=True,
            env=standin_env(workdir),
        )


def slurm_job_ids(console: str) -> dict[str, list[int]]:
    """Configuration (or rule) -> the Slurm job ids Snakemake reported submitting for it."""
    jobs: dict[str, list[int]] = {}
    for match in re.finditer(r"submitted with SLURM jobid (\d+) \(log: \S*/slurm_logs/rule_(\w+)/([^/]+)/", console):
        jobs.setdefault(match[3], []).append(int(match[1]))
    return jobs


def squeue_ids() -> set[int]:
    out = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, check=True).stdout
    return {int(line) for line in out.split()}


# Polled every 0.25 s here: the cluster tests' conditions ask squeue and sacct.
wait_for = functools.partial(support.wait_for, step_s=0.25)
# Live processes whose command line mentions the marker (ours only: the path is per test).
processes_running = support.leftovers


def cancel_our_jobs(console: str) -> None:
    """Never leave a job of a failed test queued or running."""
    for ids in slurm_job_ids(console).values():
        subprocess.run(["scancel", *map(str, ids)], capture_output=True)


def standin_sweep(workdir: Path, configurations: dict[str, Any], **cluster: Any) -> Path:
    """A sweep on the stand-in engine (tests/standin_engine.py) in ``workdir``; returns its executable."""
    exe = support.executable_standin(workdir / "bin")
    model = support.standin_model(workdir / "model.gguf")
    benchmark = {
        "runs": 2,
        "max_tokens": 16,
        "warmup_max_tokens": 4,
        "stop_grace_s": 0.5,
        "ready_timeout_s": 300,
        "request_timeout_s": 20,
    }
    config = support.standin_config(exe, model, configurations, benchmark)
    config["cluster"] = {"cpus_per_task": 1, "mem_mb": 500, **cluster}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return exe


@pytest.fixture
def standin_workdir(tmp_path: Path):
    """A working directory for a stand-in sweep; afterwards no stand-in process or Slurm job of it is left."""
    yield tmp_path
    console = "".join(p.read_text() for p in tmp_path.glob("console*.txt"))
    cancel_our_jobs(console)
    left = processes_running(tmp_path / "bin")
    kill_all(left)
    assert not left, f"stand-in engine processes left behind: {[p.pid for p in left]}"


def failed_dirs(workdir: Path, name: str) -> list[Path]:
    return support.failed_dirs_in(workdir / "results" / name)


def launch_record(workdir: Path, name: str) -> dict[str, Any]:
    return support.launch_json(workdir / "results" / name)
