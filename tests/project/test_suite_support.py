"""The suite's own machinery: the slurm mark reaches every cluster test, and the quick scontrol answers
only the plugin's question, only while no controller runs here."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from support import quick_scontrol

REPO = Path(__file__).resolve().parents[2]


def collected(*args: str) -> list[str]:
    # (without the inner session's checkout guard, whose snapshot walk this session's guard would see)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:checkout-guard",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_every_cluster_test_is_marked_slurm():
    cluster_tests = collected("tests/slurm")
    assert cluster_tests and all(t.startswith("tests/slurm/") for t in cluster_tests)
    assert collected("tests/slurm", "-m", "slurm") == cluster_tests
    assert collected("tests/slurm", "-m", "not slurm") == []


def test_the_quick_scontrol_answers_the_plugin_at_once_and_hands_on_the_rest(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "scontrol").write_text('#!/bin/sh\necho "real scontrol $*"\n')
    (real / "scontrol").chmod(0o755)
    quick = quick_scontrol(tmp_path / "quick")
    # (the quick one need not be first: it hands on to the next scontrol on PATH after itself)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{quick.parent}{os.pathsep}{real}{os.pathsep}/usr/bin:/bin"}

    def scontrol(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=30, env=env)

    def controller_running() -> bool:
        return subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True).returncode == 0

    assert scontrol("ping").stdout == "real scontrol ping\n"
    for _ in range(3):  # (the test cluster may start or stop beside this test: ask again if it did meanwhile)
        controller_here = controller_running()
        started = time.monotonic()
        asked = scontrol("show", "config")
        if controller_running() == controller_here:
            break
    if controller_here:  # the test cluster is up (tests/slurm ran before): the real one answers
        assert asked.stdout == "real scontrol show config\n"
    else:  # what the real one says after ~10 s when no controller answers, at once
        assert asked.returncode == 1 and "Unable to contact slurm controller" in asked.stderr
        assert time.monotonic() - started < 5


def test_a_session_fixture_shared_across_units_of_work_is_refused_by_name():
    import schedule

    shared = "faults/conftest.py::sweep"
    together = {f"tests/{module}::test_x": {shared} for module in schedule.SHARED_SESSION_FIXTURE}
    assert schedule.split_fixtures(together) == []
    apart = {**together, "tests/faults/test_faults_load.py::test_y": {shared}}
    assert schedule.split_fixtures(apart) == [f"{shared} (units faults-shared-sweep, faults/test_faults_load.py)"]
    assert schedule.unit_of("tests/slurm/test_two_nodes.py::test_z") == schedule.unit_of(
        "tests/slurm/test_node_lock.py::test_w"
    )


def test_every_cluster_module_has_a_slurm_lane():
    modules = {t.split("::")[0].removeprefix("tests/") for t in collected("tests/slurm")}
    import schedule

    assert modules and modules == set(schedule.SLURM_LANES)
