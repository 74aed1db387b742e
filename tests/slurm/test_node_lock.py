"""The measuring lock on simulated nodes: each node a mount namespace with its own /run/lock (a tmpfs,
as on a real node), all sharing one cache directory (as a cluster's shared filesystem would).

Two nodes measure at the same time even though their cache is one path; two sessions on one node never
overlap. (A second slurmd on this host was not attempted: several slurmd on one host need a Slurm built
with --enable-multiple-slurmd; the namespaces give each simulated node what makes it a node for the lock.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HOLDER = Path(__file__).resolve().parents[1] / "lock_holder.py"
# A node: a private mount namespace whose /run/lock is a fresh tmpfs; then the given holders, at once.
NODE = 'mount -t tmpfs simulated-node /run/lock && for label in "$@"; do "$PYTHON" "$HOLDER" "$label" 1.5 & done; wait'


def node(*labels: str, cache: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "SPECSWEEP_CACHE": str(cache), "PYTHON": sys.executable, "HOLDER": str(HOLDER)}
    env.pop("SPECSWEEP_LOCK_DIR", None)
    return subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", NODE, "node", *labels],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def spans(*nodes: subprocess.Popen[str]) -> dict[str, tuple[float, float]]:
    held = {}
    for process in nodes:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, f"simulated node failed (needs root for unshare and mount): {err}"
        for line in out.splitlines():
            label, start, end = line.split()
            held[label] = (float(start), float(end))
    return held


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return max(a[0], b[0]) < min(a[1], b[1])


def test_two_nodes_with_one_shared_cache_measure_in_parallel_one_node_in_turn(tmp_path):
    shared_cache = tmp_path / "shared-fs" / "specsweep"
    held = spans(node("node1-a", "node1-b", cache=shared_cache), node("node2-a", cache=shared_cache))
    assert len(held) == 3, held
    assert not overlap(held["node1-a"], held["node1-b"]), held  # one node: in turn
    assert overlap(held["node2-a"], held["node1-a"]) or overlap(held["node2-a"], held["node1-b"]), held
    assert not shared_cache.exists() or not list(shared_cache.rglob("*.lock"))  # no lock on the shared disk
