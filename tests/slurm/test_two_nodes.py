"""Two simulated nodes (tests/slurm/cluster.sh: node1 and node2 in partition `pair`, each a slurmd in its
own UTS and mount namespace, sharing the project, venv and cache).

- With cluster.same_node, every comparison stays on its baseline's node, and sessions of different
  groups overlap in time on different nodes, never on one.
- A node that fails during a session (its slurmd killed, the node marked down) loses no finished run:
  the configuration is measured again on the other node, and the console and summary.csv say so.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import yaml
from conftest import (
    CLUSTER,
    failed_dirs,
    launch_record,
    processes_running,
    run_slurm,
    slurm_job_ids,
    standin_sweep,
    start_slurm,
    wait_for,
)

# Every job on the two simulated nodes (the engine job too, with memory that fits them); the target
# goes first: --default-resources takes several values.
PAIR = ("--default-resources", "slurm_partition=pair", "runtime=30", "mem_mb=500")


def with_runs(workdir: Path, runs: int) -> None:
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["benchmark"]["runs"] = runs
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def spans(workdir: Path, names: list[str]) -> dict[str, tuple[str, float, float]]:
    """Configuration -> (node, first run's start, last run's end) from its run records."""
    found = {}
    for name in names:
        runs = [json.loads(p.read_text()) for p in sorted((workdir / "results" / name / "runs").glob("run_*.json"))]
        starts = [pd.Timestamp(r["started_at"]).timestamp() for r in runs]
        ends = [s + r["client"]["e2e_s"] for s, r in zip(starts, runs, strict=True)]
        found[name] = (launch_record(workdir, name)["placement"]["host"], min(starts), max(ends))
    return found


def test_comparisons_stay_on_their_baselines_node_and_nodes_measure_in_parallel(standin_workdir):
    workdir = standin_workdir
    slow = {"STANDIN_MODE": "token-delay=0.1"}  # 16 tokens x 0.1 s: each run ~1.6 s
    groups = {"base1": ["x1", "y1"], "base2": ["x2", "y2"]}
    configurations = {b: {"baseline": True, "env": slow} for b in groups} | {
        c: {"compared_with": b, "env": slow} for b, members in groups.items() for c in members
    }
    standin_sweep(workdir, configurations, same_node=True)
    done = run_slurm(workdir, "all", *PAIR)
    console = done.stdout + done.stderr
    (workdir / "console.txt").write_text(console)
    assert done.returncode == 0, console[-5000:]
    table = spans(workdir, list(configurations))
    first = min(start for _, start, _ in table.values())
    print("\nconfiguration  node   start    end (s after the first run)")
    for name, (node, start, end) in table.items():
        print(f"{name:14} {node:6} {start - first:6.1f} {end - first:6.1f}")
    for baseline, members in groups.items():
        assert {table[m][0] for m in members} == {table[baseline][0]}, table
    assert {node for node, _, _ in table.values()} == {"node1", "node2"}, table
    names = list(table)
    pairs = [(x, y) for i, x in enumerate(names) for y in names[i + 1 :]]
    overlapping = [(x, y) for x, y in pairs if max(table[x][1], table[y][1]) < min(table[x][2], table[y][2])]
    assert overlapping, f"no two sessions measured at the same time: {table}"
    assert all(table[x][0] != table[y][0] for x, y in overlapping), f"two sessions overlapped on one node: {table}"
    summary = pd.read_csv(workdir / "results" / "summary.csv")
    assert "two machines" not in " ".join(summary["warnings"].fillna(""))
    assert summary["speedup"].notna().all()  # every configuration compared with its own baseline


def test_a_node_that_fails_during_a_session_loses_no_finished_run(standin_workdir):
    workdir = standin_workdir
    # 16 tokens x 0.5 s a run while workdir/slow exists: the orphan outlasts the failure and the rerun's start;
    # the rerun's engine, started once the file is gone, is fast
    (workdir / "slow").touch()
    mode = {"STANDIN_MODE": "token-delay=0.5", "STANDIN_ONLY_IF": str(workdir / "slow")}
    exe = standin_sweep(workdir, {"victim": {"baseline": True, "env": mode}})
    with_runs(workdir, 10)
    snakemake = start_slurm(workdir, "all", *PAIR)
    runs = workdir / "results" / "victim" / "runs"
    # two runs finished: then the node fails under the session
    assert wait_for(lambda: len(list(runs.glob("run_*.json"))) >= 2, 240), (workdir / "console.txt").read_text()[-3000:]
    node = launch_record(workdir, "victim")["placement"]["host"]
    job = launch_record(workdir, "victim")["placement"]["slurm_job_id"]
    other = {"node1": "node2", "node2": "node1"}[node]
    try:
        subprocess.run(["sh", str(CLUSTER), "kill-node", node], check=True)
        subprocess.run(["scontrol", "update", f"nodename={node}", "state=down", "reason=node-loss test"], check=True)
        (workdir / "slow").unlink()
        assert snakemake.wait(180) != 0
        first = (workdir / "console.txt").read_text()
        assert f"SLURM-job '{job}' failed due to a node failure" in first, first[-4000:]
        assert f"specsweep: victim: node {node} failed" in first and "rerun the same command" in first, first[-4000:]
        assert processes_running(exe), "the orphaned session should still run on the failed node"
        # the command the console names: the same one again; the other node measures it
        rerun = run_slurm(workdir, "all", *PAIR)
        console = rerun.stdout + rerun.stderr
        (workdir / "console-rerun.txt").write_text(console)
        assert rerun.returncode == 0, console[-5000:]
        # the orphan notices at its next run, adds its own account, and its job's Snakemake deletes nothing
        notes = lambda: " ".join(e.read_text() for e in (workdir / "results" / "victim" / "failed").glob("*/error.txt"))  # noqa: E731
        assert wait_for(lambda: "The orphaned session itself" in notes(), 60), notes()
        assert wait_for(lambda: not processes_running(exe), 30), "the orphan's engine is still running"
    finally:
        subprocess.run(["sh", str(CLUSTER), "start-node", node], capture_output=True)  # stops what ran there
    launch = launch_record(workdir, "victim")
    assert launch["status"] == "completed" and launch["placement"]["host"] == other
    assert str(slurm_job_ids(console)["victim"][-1]) == launch["placement"]["slurm_job_id"]
    assert (
        "re-measured after a failed attempt (an earlier attempt was lost: warnings in summary.csv): victim" in console
    ), console[-3000:]
    # the batch script's Snakemake of the lost job was stopped before its latency-wait ran out: it removed nothing
    orphan_log = " ".join(p.read_text() for p in (workdir / "logs" / "bench").glob("victim.*.log"))
    assert f"Slurm reports job {job} NODE_FAIL: stopped its batch script's Snakemake (pid " in orphan_log, orphan_log
    batch_log = (workdir / ".snakemake" / "slurm_logs" / "rule_bench" / "victim" / f"{job}.log").read_text()
    assert "Removing output files" not in batch_log, batch_log[-3000:]
    # the orphan's finished runs are kept, in a folder named after its job
    (kept,) = [d for d in failed_dirs(workdir, "victim") if d.name.endswith(f"-job{job}")]
    kept_runs = sorted(p.name for p in (kept / "runs").glob("run_*.json"))
    assert {"run_0.json", "run_1.json"} <= set(kept_runs), kept_runs
    assert f"node {node} failed" in (kept / "error.txt").read_text()
    summary = pd.read_csv(workdir / "results" / "summary.csv")
    (warnings,) = summary.loc[summary["configuration"] == "victim", "warnings"]
    assert f"re-measured after a failed attempt: node {node} failed" in warnings
    assert str(kept.relative_to(workdir)) in warnings
