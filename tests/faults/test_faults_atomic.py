"""Atomic writes (group 8): a crash mid-write never leaves a half-written file under a name a later
run (or Snakemake, which trusts any existing output) would read.

Each writer of the pipeline is crashed half-way in two ways: its serialiser raises after part of the
data reached the file, and a process writing a large file is SIGKILLed mid-write (no clean-up runs).
The previous complete file must still be there, byte for byte.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from conftest import wait_for

from specsweep.analyse import aggregate
from specsweep.archive import archive
from specsweep.engines.server import StaleGroup
from specsweep.record import atomic
from specsweep.record.atomic import write_json
from specsweep.report import figures, paper


class Exploding:
    """A cell whose text raises: to_csv has flushed the rows before it when it is reached."""

    def __str__(self) -> str:
        raise RuntimeError("serialiser crashed half-way")


def test_a_csv_whose_serialiser_raises_half_way_leaves_the_old_file(tmp_path):
    path = tmp_path / "summary.csv"
    aggregate.write_csv(pd.DataFrame({"x": [1, 2]}), path)
    before = path.read_bytes()
    rows = 300_000  # several of pandas' write chunks, so data reaches the disk before the crash
    frame = pd.DataFrame({"x": [str(i) for i in range(rows)]}, dtype=object)
    frame.iloc[rows - 1, 0] = Exploding()
    with pytest.raises(RuntimeError, match="half-way"):
        aggregate.write_csv(frame, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.csv"]  # no litter either


WRITERS = {
    "write_json": lambda p: write_json(p, {"ok": 1}),
    "aggregate.write_csv": lambda p: aggregate.write_csv(pd.DataFrame({"ok": [1]}), p),
    "paper.write": lambda p: paper.write(p.parent.parent / "summary.csv", p, p.with_suffix(".t")),
    "figures.save": lambda p: figures.save(plt.figure(), p.with_suffix(""), ("png",)),
    "archive.pack": lambda p: archive.pack({"a.txt": b"a"}, p, "top"),
    "StaleGroup.record": lambda p: StaleGroup(p).record(12345, ["llama-server"]),
}
SUFFIXES = {"paper.write": ".tex", "figures.save": ".png", "archive.pack": ".tar.gz"}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_write_that_fails_before_it_is_durable_never_replaces_the_file(tmp_path, monkeypatch, writer):
    """Every writer goes through atomic.atomic_path: when the last step before the rename fails
    (here fsync, as on a full or vanished disk), the old file stays and nothing else is left."""
    pd.DataFrame(
        {
            "configuration": ["baseline"],
            "baseline": [True],
            "runs": [1],
            "decode_tok_s_mean": [1.0],
            "decode_tok_s_ci95_low": [1.0],
            "decode_tok_s_ci95_high": [1.0],
        }
    ).to_csv(tmp_path / "summary.csv", index=False)
    path = tmp_path / "out" / f"out{SUFFIXES.get(writer, '.json')}"
    path.parent.mkdir()
    path.write_bytes(b"previous complete file\n")

    def crash(_fd: int) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(atomic.os, "fsync", crash)
    with pytest.raises(OSError, match="disk gone"):
        WRITERS[writer](path)
    assert path.read_bytes() == b"previous complete file\n"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


CHILD = """
import sys, pandas as pd
from pathlib import Path
from specsweep.analyse import aggregate
from specsweep.record.atomic import write_json
path, kind = Path(sys.argv[1]), sys.argv[2]
big = list(range(3_000_000))
while True:  # rewrite a large file for ever: the parent kills us somewhere in the middle
    if kind == "json":
        write_json(path, {"values": big})
    else:
        aggregate.write_csv(pd.DataFrame({"values": big}), path)
"""


@pytest.mark.parametrize("kind", ["json", "csv"])
def test_sigkill_mid_write_leaves_the_previous_complete_file(tmp_path, kind):
    path = tmp_path / f"record.{kind}"
    (write_json(path, {"values": [1]}) if kind == "json" else aggregate.write_csv(pd.DataFrame({"values": [1]}), path))
    before = path.read_bytes()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), kind])
    try:

        def mid_write() -> bool:  # a partial file that has data but is not finished
            return child.poll() is not None or any(
                p.stat().st_size > 1 << 20 for p in tmp_path.glob(f".{path.name}.*.partial")
            )

        assert wait_for(mid_write, 60, step_s=0.002) and child.poll() is None, "the child never got to write"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    time.sleep(0.1)
    now = path.read_bytes()
    if now != before:  # an earlier loop iteration finished: then it is the whole new file
        assert (json.loads(now)["values"][-1] if kind == "json" else pd.read_csv(path)["values"].iloc[-1]) == 2_999_999
    leftovers = [p.name for p in tmp_path.iterdir() if p != path]
    assert all(name.startswith(f".{path.name}.") and name.endswith(".partial") for name in leftovers), leftovers
