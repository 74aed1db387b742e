"""The measuring lock is node-local: one per node and cache, never a file on the (maybe shared) cache."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from specsweep.record import locks

HOLDER = Path(__file__).resolve().parents[2] / "lock_holder.py"


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
    assert str(first.parent.parent) in locks.NODE_LOCAL_DIRS and first.parent.name == f"specsweep-{os.geteuid()}"
    assert not str(first).startswith(str(tmp_path))
    monkeypatch.setenv("SPECSWEEP_CACHE", str(tmp_path / "b"))
    assert locks.measure_lock_path() != first  # separate caches (users, tests) keep separate locks
    monkeypatch.setenv("SPECSWEEP_LOCK_DIR", str(tmp_path / "local"))
    assert locks.measure_lock_path().parent == tmp_path / "local" / f"specsweep-{os.geteuid()}"


def hold(lock: Path) -> None:
    with locks.holding(lock, "cfg", io.StringIO()):
        pass


def test_a_link_planted_at_the_lock_is_refused_and_its_target_untouched(tmp_path):
    # /run/lock is world-writable and the name predictable: a link there made a sweep truncate its target
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    lock = tmp_path / "node" / f"specsweep-{os.geteuid()}" / "specsweep-measure-0.lock"
    lock.parent.mkdir(parents=True, mode=0o700)
    lock.symlink_to(target)
    with pytest.raises(locks.LockRefused, match=r"specsweep-measure-0\.lock: not a regular file of this user's"):
        hold(lock)
    assert target.read_text() == "keep me\n"


def test_the_lock_lives_in_a_folder_only_its_user_can_write(tmp_path):
    lock = tmp_path / "node" / f"specsweep-{os.geteuid()}" / "specsweep-measure-0.lock"
    with locks.holding(lock, "cfg", io.StringIO()):
        assert json.loads(lock.read_text())["label"] == "cfg"
    assert stat.S_IMODE(lock.parent.stat().st_mode) == 0o700 and stat.S_IMODE(lock.stat().st_mode) == 0o600
    lock.parent.chmod(0o777)  # a folder anybody can write: anybody could plant the lock
    with pytest.raises(locks.LockRefused, match=r"writable by others \(mode 777\).*SPECSWEEP_LOCK_DIR"):
        hold(lock)
    lock.parent.chmod(0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = tmp_path / "node2" / f"specsweep-{os.geteuid()}"
    planted.parent.mkdir()
    planted.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(locks.LockRefused, match="the measuring lock's folder is a link"):
        hold(planted / "specsweep-measure-0.lock")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file another user's needs root")
def test_a_lock_or_folder_another_user_made_first_is_refused_naming_the_fix(tmp_path):
    lock = tmp_path / "node" / f"specsweep-{os.geteuid()}" / "specsweep-measure-0.lock"
    lock.parent.mkdir(parents=True, mode=0o700)
    lock.write_text("")
    os.chown(lock, 4242, 4242)
    with pytest.raises(locks.LockRefused, match=r"not a regular file of this user's \(uid 4242"):
        hold(lock)
    os.chown(lock.parent, 4242, 4242)
    with pytest.raises(locks.LockRefused, match="owned by uid 4242"), locks.holding(lock, "cfg", io.StringIO()):
        pass
