"""benchmarks/common.py: a child's output is read whatever it writes to which pipe."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

# a child that fills stderr (256 KiB, four pipes' worth) before it writes its last stdout line
CHILD = "import sys; sys.stderr.write('e' * 262144); sys.stderr.flush(); print('done')"


def test_run_child_reads_stdout_and_a_full_stderr_at_once() -> None:
    # in a driver process of its own: were run_child to block, the timeout ends the driver and the
    # child's write fails on the closed pipe, so nothing is left behind
    driver = (
        f"import sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import common; "
        f"run = common.run_child([sys.executable, '-c', {CHILD!r}]); print(run.stdout.strip(), run.peak_rss_mib > 0)"
    )
    try:
        finished = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError("run_child blocked on a child writing 256 KiB to stderr") from None
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.split() == ["done", "True"]
