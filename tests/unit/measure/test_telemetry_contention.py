"""Contention measured for real: a busy process started beside a stand-in measurement (tests/contention_probe.py)
is named and flags it; the same load inside the measuring process's own tree (an engine) is not contention.
Run under the heavy lock (`flock /tmp/specsweep-heavy.lock`): it loads a core for a few seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from specsweep.measure import telemetry

PROBE = Path(__file__).resolve().parents[2] / "contention_probe.py"
CLK_TCK = os.sysconf("SC_CLK_TCK")  # /proc counts CPU time in these ticks


def _ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _probe(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(PROBE), "2", *args], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_a_busy_process_outside_the_measurement_is_named_and_flags_it():
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        before = _ticks(busy.pid)
        found = _probe()
        used_s = (_ticks(busy.pid) - before) / CLK_TCK  # what it used while the probe ran (and its start)
    finally:
        busy.kill()
        busy.wait()
    contention = found["record"]["contention"]
    named = {p["pid"]: p for p in contention["top_other"]}
    assert busy.pid in named
    # at most what it used from before the probe started to after it ended; at least a share of a core on a
    # machine that other work loads too
    assert 0.2 <= named[busy.pid]["cpu_s"] <= used_s + 0.02
    assert contention["other_cpu_s"] >= named[busy.pid]["cpu_s"] - 0.05
    assert contention["other_cpu_pct"] > telemetry.OTHER_CPU_PCT
    assert "other processes used" in telemetry.contended(contention)


def test_the_engines_own_load_is_not_contention():
    found = _probe("own")
    contention = found["record"]["contention"]
    assert found["busy_pid"] not in {p["pid"] for p in contention["top_other"]}


def _contention(pct: float, cpu_s: float, top: list[dict] | None = None) -> dict:
    return {
        "other_cpu_pct": pct,
        "other_cpu_s": cpu_s,
        "steal_pct": 0.0,
        "top_other": top or [],
        "gpu_other_processes": [],
    }


def test_a_few_ticks_in_a_short_run_are_not_contention_but_a_tenth_of_a_second_is():
    # two 10 ms ticks of a kernel thread in a 0.1 s run read 11 %: tick noise, not another workload
    assert telemetry.contended(_contention(11.1, 0.02)) is None
    reason = telemetry.contended(_contention(11.1, telemetry.MIN_OTHER_CPU_S))
    assert reason == "other processes used 11.1 % of the CPUs (processes that ended before the measurement did)"
    named = telemetry.contended(_contention(30.0, 1.5, [{"pid": 7, "command": "make", "cpu_s": 1.4}]))
    assert named == "other processes used 30 % of the CPUs (make 1.4 s)"
