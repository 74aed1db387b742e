"""A stand-in measurement for tests/unit/measure/test_telemetry_contention.py: samples for ``argv[1]`` seconds of sleep
(with ``own`` as argv[2]: while a busy child of its own runs, as an engine would) and prints the record."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from specsweep.measure import telemetry

seconds, own = float(sys.argv[1]), sys.argv[2:] == ["own"]
busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if own else None
try:
    watch = telemetry.watch({"telemetry_hz": 10}, {}, Path("/nonexistent"))
    with watch.sampled() as sampler:
        time.sleep(seconds)
    print(json.dumps({"busy_pid": busy.pid if busy else None, "record": sampler.record}))
finally:
    if busy:
        busy.kill()
        busy.wait()
