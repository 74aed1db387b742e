"""The measuring lock is node-local: one per node and cache, never a file on the (maybe shared) cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from specsweep.record import locks

HOLDER = Path(__file__).with_name("lock_holder.py")


def hold_together(holders: list[dict[str, str]], seconds: float = 1.0) -> list[tuple[float, float]]:
    """Start one lock holder per environment at once; return each one's (start, end) of holding."""
    processes = [
        subprocess.Popen(
            [sys.executable, str(HOLDER), str(i), str(seconds)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for i, env in enumerate(holders)
    ]
    spans = []
    for process in processes:
        out, _ = process.communicate(timeout=60)
        assert process.returncode == 0
        _, start, end = out.split()
        spans.append((float(start), float(end)))
    return spans


def overlap(spans: list[tuple[float, float]]) -> bool:
    first, second = sorted(spans)
    return second[0] < first[1]  # the later one started before the earlier one ended


def test_two_nodes_sharing_one_cache_measure_at_once_and_one_node_never_does(tmp_path):
    shared_cache = str(tmp_path / "nfs" / "cache")  # the cache a cluster keeps on a shared filesystem
    node = {name: str(tmp_path / name / "run-lock") for name in ("node1", "node2")}
    for folder in node.values():
        Path(folder).mkdir(parents=True)
    base = {**os.environ, "SPECSWEEP_CACHE": shared_cache}
    across = hold_together(
        [{**base, "SPECSWEEP_LOCK_DIR": node["node1"]}, {**base, "SPECSWEEP_LOCK_DIR": node["node2"]}]
    )
    within = hold_together([{**base, "SPECSWEEP_LOCK_DIR": node["node1"]}] * 2)
    assert overlap(across), across
    assert not overlap(within), within
    assert not Path(shared_cache).exists()  # no lock file on the shared filesystem


def test_the_lock_is_in_a_node_local_directory_and_named_after_the_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("SPECSWEEP_LOCK_DIR", raising=False)
    monkeypatch.setenv("SPECSWEEP_CACHE", str(tmp_path / "a"))
    first = locks.measure_lock_path()
    assert str(first.parent) in locks.NODE_LOCAL_DIRS
    assert not str(first).startswith(str(tmp_path))
    monkeypatch.setenv("SPECSWEEP_CACHE", str(tmp_path / "b"))
    assert locks.measure_lock_path() != first  # separate caches (users, tests) keep separate locks
    monkeypatch.setenv("SPECSWEEP_LOCK_DIR", str(tmp_path / "local"))
    assert locks.measure_lock_path().parent == tmp_path / "local"
