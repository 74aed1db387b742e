"""End to end under Slurm on the real llama-server: the same small sweep (baseline and one speculative
configuration, 2 runs x 32 tokens) through `snakemake --profile profiles/slurm` and locally.

The two summaries must agree on configurations, columns and statuses (the numbers are measurements);
the engine build and both sessions must really have been Slurm jobs, and no engine may be left.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, cancel_our_jobs, slurm_job_ids, slurm_snakemake_argv

from specsweep.engines.server import group_members

pytestmark = pytest.mark.engine
CONFIGURATIONS = ["baseline", "ngram"]


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory) -> dict[str, Path | str]:
    config = yaml.safe_load((REPO / "tests" / "data" / "config.yaml").read_text())
    config["benchmark"].update(max_tokens=32, prompts=str(REPO / "config" / "prompts.txt"))
    config["cluster"] = {"cpus_per_task": 2, "mem_mb": 2000}
    local, slurm = tmp_path_factory.mktemp("local"), tmp_path_factory.mktemp("slurm")
    for workdir in (local, slurm):
        (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--snakefile",
            str(REPO / "Snakefile"),
            "--directory",
            str(local),
            "--configfile",
            str(local / "config.yaml"),
            "--cores",
            "1",
            "all",
        ],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    # --verbose: the plugin prints each sbatch command line
    on_slurm = subprocess.run(
        slurm_snakemake_argv(slurm, "--verbose", "all"), capture_output=True, text=True, timeout=3600
    )
    console = on_slurm.stdout + on_slurm.stderr
    (slurm / "console.txt").write_text(console)
    if on_slurm.returncode != 0:
        cancel_our_jobs(console)
    assert on_slurm.returncode == 0, console[-6000:]
    return {"local": local, "slurm": slurm, "console": console}


def test_summary_under_slurm_has_the_local_configurations_columns_and_statuses(sweeps):
    local = pd.read_csv(sweeps["local"] / "results" / "summary.csv")
    slurm = pd.read_csv(sweeps["slurm"] / "results" / "summary.csv")
    assert list(slurm.columns) == list(local.columns)
    assert list(slurm["configuration"]) == list(local["configuration"]) == CONFIGURATIONS
    assert list(slurm["status"]) == list(local["status"]) == ["ok", "ok"]
    assert (slurm["runs"] == 2).all() and (slurm["tokens_per_run"] == 32).all()
    assert set(slurm["host"]) == {socket.gethostname()}  # the node (this host) is named in the summary
    assert "two machines" not in " ".join(slurm["warnings"].fillna(""))


def test_engine_build_and_sessions_were_slurm_jobs_the_rest_ran_locally(sweeps):
    console = sweeps["console"]
    jobs = slurm_job_ids(console)
    assert set(jobs) == {"llama", *CONFIGURATIONS}, jobs  # rule engine (wildcard llama) and bench
    for name in CONFIGURATIONS:
        launch = json.loads((sweeps["slurm"] / "results" / name / "launch.json").read_text())
        assert launch["placement"]["slurm_job_id"] == str(jobs[name][-1])
        assert launch["placement"]["host"] == socket.gethostname()
    for light in ("summary", "figures", "provenance", "model"):
        assert f"localrule {light}:" in console
    # the measuring job's sbatch line: whole node, the engine's cores (its -t, over cluster.cpus_per_task),
    # memory, a time limit
    threads = yaml.safe_load((REPO / "tests" / "data" / "config.yaml").read_text())["engines"]["llama"]["args"]["-t"]
    bench_calls = [line for line in console.splitlines() if line.startswith("sbatch call:") and "rule_bench" in line]
    assert len(bench_calls) == 2, console[-3000:]
    for call in bench_calls:
        assert "--exclusive" in call and f"--cpus-per-task={threads}" in call and re.search(r" --mem 2000 ", call)
        assert re.search(r" -t \d+ ", call)


def test_no_engine_process_is_left_on_the_node(sweeps):
    for name in CONFIGURATIONS:
        pid = json.loads((sweeps["slurm"] / "results" / name / "launch.json").read_text())["pid"]
        assert pid and group_members(pid) == [], f"{name}: process group {pid} still has members"
    left = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, check=True).stdout.split()
    assert not set(map(int, left)) & {i for ids in slurm_job_ids(sweeps["console"]).values() for i in ids}
