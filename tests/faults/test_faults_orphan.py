"""A session orphaned by a node failure (measure/claim.py): while it still measures on the failed node,
a new attempt takes the configuration over. The orphan notices at its next run, stops, writes nothing
more under the configuration's folder (the new attempt's files stay as they are) and keeps every run
it finished in the failed/ folder named after its Slurm job.

The scheduler is played by a squeue/sinfo on PATH that report the orphan's job as NODE_FAIL on a down
node; the orphan runs as a child process with that job's Slurm variables, the taker in the test.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

from conftest import DRIVER, executable_standin, leftovers, results_of, session_spec, wait_for

from specsweep.measure import claim as claims
from specsweep.measure.progress import SessionProgress
from specsweep.record.atomic import write_json


def fake_scheduler(folder):
    folder.mkdir(parents=True)
    for name, out in (("squeue", "NODE_FAIL node1"), ("sinfo", "down*|node loss")):
        (folder / name).write_text(f"#!/bin/sh\necho '{out}'\n")
        (folder / name).chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def test_an_orphan_stops_at_its_next_run_and_keeps_its_runs_where_the_taker_moved_them(
    tmp_path, monkeypatch, model_file
):
    standin = executable_standin(tmp_path / "bin")
    spec = session_spec(tmp_path, standin, model_file, env={"STANDIN_MODE": "token-delay=0.1"}, runs=8)
    path = fake_scheduler(tmp_path / "fake-bin")
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    orphan = subprocess.Popen(
        [sys.executable, str(DRIVER), str(tmp_path / "spec.json")],
        env={
            **os.environ,
            "SPECSWEEP_CACHE": spec["cache"],
            "PATH": path,
            "SLURM_JOB_ID": "13",
            "SLURMD_NODENAME": "node1",
        },
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    folder = results_of(spec)
    try:
        assert wait_for(lambda: (folder / "runs" / "run_1.json").exists(), 60)
        # the new attempt, on node2, finds the orphan's claim and takes the folder over
        monkeypatch.setenv("PATH", path)
        monkeypatch.setenv("SLURM_JOB_ID", "14")
        monkeypatch.setenv("SLURMD_NODENAME", "node2")
        evidence = [
            folder / "launch.json",
            folder / "server.log",
            *(folder / "runs" / f"run_{i}.json" for i in range(8)),
        ]
        console = io.StringIO()
        taker = claims.take(folder, evidence, SessionProgress("cfg", console))
        assert "node node1 failed (down* (node loss)) while Slurm job 13 measured there" in console.getvalue()
        write_json(folder / "runs" / "run_0.json", {"the new attempt's": True})  # what it measures from now on
        (folder / "server.log").unlink()
        (folder / "server.log").write_text("the new attempt's server\n")
        output, _ = orphan.communicate(timeout=60)
    finally:
        orphan.kill()
    assert orphan.returncode != 0
    assert "cfg: FAILED (" in output and "was taken over by Slurm job 14" in output, output
    (kept,) = (folder / "failed").iterdir()
    assert kept.name.endswith("-job13") and f"partial results kept in {kept}" in output
    # every run the orphan finished is kept, and it measured no further than one run past the take-over
    finished = sorted(int(p.stem.split("_")[1]) for p in (kept / "runs").glob("run_*.json"))
    assert finished == list(range(len(finished))) and 2 <= len(finished) <= 4, finished
    assert json.loads((kept / "launch.json").read_text())["status"] == "failed"
    assert "node node1 failed" in (kept / "error.txt").read_text()
    assert "was taken over" in (kept / "error.txt").read_text()
    # the new attempt's files are untouched by the orphan
    assert json.loads((folder / "runs" / "run_0.json").read_text()) == {"the new attempt's": True}
    assert (folder / "server.log").read_text() == "the new attempt's server\n"
    assert not (folder / "runs" / f"run_{len(finished)}.json").exists()
    assert json.loads((folder / claims.CLAIM).read_text())["key"] == "job14"
    assert not (folder / ".session-job13").exists()
    taker.release()
    assert wait_for(lambda: not leftovers(standin), 10)
