"""Machine facts: nvidia-smi parsing on captured text, git state, the snapshot of this host."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from specsweep.measure import machine

DATA = Path(__file__).resolve().parents[2] / "data" / "nvidia-smi"
# Captured with `nvidia-smi -q` / `nvidia-smi topo -m` on a one-GPU H200 host (driver 580.159.04).
H200_Q = (DATA / "h200-q.txt").read_text()
H200_TOPO = (DATA / "h200-topo.txt").read_text()
# Written by hand in nvidia-smi's layout (tabs, ANSI underline in the heading) for a 2-GPU NVLink host
# with a NIC, which the one-GPU capture cannot show.
TOPO_2GPU = (
    "\t\x1b[4mGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    "GPU0\t X \tNV18\tSYS\t0-55,112-167\t0\t\tN/A\n"
    "GPU1\tNV18\t X \tSYS\t0-55,112-167\t0\t\tN/A\n"
    "NIC0\tSYS\tSYS\t X \t\t\t\t\n\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded "
    "set of # NVLinks\n\nNIC Legend:\n\n  NIC0: mlx5_0\n"
)


def test_nvidia_smi_q_of_a_real_h200():
    parsed = machine.parse_nvidia_smi_q(H200_Q)
    assert parsed["Driver Version"] == "580.159.04"
    assert parsed["CUDA Version"] == "13.0"
    assert parsed["Attached GPUs"] == "1"
    [gpu] = parsed["gpus"]
    assert gpu["bus_id"] == "00000000:00:06.0"
    assert gpu["Product Name"] == "NVIDIA H200"
    assert gpu["MIG Mode"] == {"Current": "Disabled", "Pending": "Disabled"}
    assert gpu["FB Memory Usage"]["Total"] == "143771 MiB"
    assert gpu["Clocks"]["SM"].endswith("MHz")
    assert gpu["Persistence Mode"] == "Enabled"


def test_nvidia_smi_q_sections_repeats_and_several_gpus():
    text = (
        "Driver Version : 1\nAttached GPUs : 2\nGPU 00000000:18:00.0\n    Product Name : A\n"
        "    Processes\n        Process ID : 11\n        Process ID : 12\n    Reserved :\n"
        "GPU 00000000:2A:00.0\n    Product Name : B\n"
    )
    parsed = machine.parse_nvidia_smi_q(text)
    assert [g["Product Name"] for g in parsed["gpus"]] == ["A", "B"]
    assert parsed["gpus"][0]["Processes"]["Process ID"] == ["11", "12"]
    assert parsed["gpus"][0]["Reserved"] == ""
    assert parsed["gpus"][1]["bus_id"] == "00000000:2A:00.0"


def test_topology_of_a_real_h200():
    topo = machine.parse_topology(H200_TOPO)
    assert topo["matrix"] == {"GPU0": {"GPU0": "X"}}
    assert topo["affinity"]["GPU0"] == {"CPU Affinity": "0-15", "NUMA Affinity": "0", "GPU NUMA ID": "N/A"}


def test_topology_with_nvlink_and_nic():
    topo = machine.parse_topology(TOPO_2GPU)
    assert topo["matrix"]["GPU0"] == {"GPU0": "X", "GPU1": "NV18", "NIC0": "SYS"}
    assert topo["matrix"]["NIC0"]["GPU1"] == "SYS"
    assert topo["affinity"]["GPU1"]["CPU Affinity"] == "0-55,112-167"
    assert "NIC0" not in topo["affinity"]
    assert machine.parse_topology("") == {"matrix": {}, "affinity": {}}


def test_gpus_is_none_without_nvidia_smi(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert machine.gpus() is None


def test_gpus_runs_nvidia_smi_when_present(monkeypatch, tmp_path):
    """A fake nvidia-smi that prints the captured H200 text stands in for the real one."""
    (tmp_path / "q.txt").write_text(H200_Q)
    (tmp_path / "topo.txt").write_text(H200_TOPO)
    fake = tmp_path / "nvidia-smi"
    fake.write_text(f'#!/bin/sh\nif [ "$1" = topo ]; then cat {tmp_path}/topo.txt; else cat {tmp_path}/q.txt; fi\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    found = machine.gpus()
    assert found["count"] == 1 and found["models"] == ["NVIDIA H200"]
    assert found["driver_version"] == "580.159.04" and found["cuda_version"] == "13.0"
    assert found["topology"]["matrix"] == {"GPU0": {"GPU0": "X"}}


def test_git_state_reports_dirty_tracked_files(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "a.txt").write_text("1")
    git("add", "a.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    clean = machine.git_state(tmp_path)
    assert len(clean["commit"]) == 40 and clean["dirty"] is False
    (tmp_path / "a.txt").write_text("2")
    dirty = machine.git_state(tmp_path)
    assert dirty["dirty"] is True and dirty["changed_files"] == ["a.txt"]
    assert machine.git_state(tmp_path / "nowhere") is None


def test_machine_snapshot_on_this_host():
    snapshot = machine.snapshot()
    host = snapshot["host"]
    assert host["logical_cpus"] >= 1 and host["memory_bytes"] > 0 and host["kernel"]
    assert snapshot["packages"]["pandas"] and snapshot["python"]["version"].startswith("3.")
    json.dumps(snapshot)  # must be JSON as it is
