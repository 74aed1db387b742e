"""GPU-memory hygiene logic, run on the CPU against a stand-in ``nvidia-smi``.

Output formats are those of ``nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits``
and ``--query-compute-apps=pid,process_name,used_memory --format=csv,noheader`` (NVIDIA driver 580,
as read on the H200 machine: see docs/examples/h200/).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from specsweep.measure import gpu

FAKE = """#!/bin/sh
# Stand-in nvidia-smi: memory readings come from a file, one line per call, the last one repeating.
state="{state}"
case "$1" in
  --query-compute-apps*) echo "4242, /usr/bin/llama-server, 750 MiB"; exit 0;;
esac
line=$(head -n 1 "$state")
rest=$(tail -n +2 "$state")
[ -n "$rest" ] && printf '%s\\n' "$rest" > "$state"
printf '%s\\n' "$line" | tr ';' '\\n'
"""


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    state = tmp_path / "readings"
    script = tmp_path / "nvidia-smi"
    script.write_text(FAKE.format(state=state))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")

    def readings(*lines: str) -> None:
        state.write_text("\n".join(lines) + "\n")

    return readings


def test_parse_memory_csv_skips_malformed_lines():
    assert gpu.parse_memory_csv("0, 750\n1, 0\n[N/A]\n2, x\n") == {0: 750, 1: 0}


def test_released_memory_is_recorded(fake_smi):
    fake_smi("0, 1;1, 5", "0, 760;1, 5", "0, 700;1, 5", "0, 1;1, 5")
    record = gpu.MemoryRecord(gpus=None)
    record.read("before_launch")
    record.read("while_serving")
    record.wait_released(timeout_s=10, tolerance_mib=64)
    assert record.phases["while_serving"] == {0: 760, 1: 5}
    assert record.phases["after_teardown"] == {0: 1, 1: 5}
    assert record.released_after_s is not None and record.released_after_s >= 1.0
    assert record.as_dict()["mib_used"]["before_launch"] == {"0": 1, "1": 5}


def test_memory_still_held_fails_loudly_naming_the_process(fake_smi):
    fake_smi("0, 1", "0, 750")
    record = gpu.MemoryRecord(gpus=[0])
    record.read("before_launch")
    with pytest.raises(gpu.GpuMemoryNotReleased) as error:
        record.wait_released(timeout_s=1.5, tolerance_mib=64)
    assert "{0: 749}" in str(error.value) and "llama-server" in str(error.value)


def test_only_watched_gpus_count(fake_smi):
    fake_smi("0, 1;1, 9000", "0, 2;1, 12000")
    record = gpu.MemoryRecord(gpus=[0])
    record.read("before_launch")
    record.wait_released(timeout_s=5, tolerance_mib=64)  # GPU 1 belongs to someone else
    assert record.phases["after_teardown"] == {0: 2}


def test_available_reflects_path(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert not gpu.available()
