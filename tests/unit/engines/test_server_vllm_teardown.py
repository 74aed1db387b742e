"""vLLM's process tree under teardown: the API server's EngineCore child is in the group that is stopped.

vLLM 0.25.0 starts its EngineCore with ``multiprocessing`` (``vllm/v1/engine/utils.py``: ``context.Process``
with ``name=EngineCore...``, no ``setsid``) and the EngineCore turns SIGTERM into a shutdown
(``vllm/v1/engine/core.py``: ``signal.signal(signal.SIGTERM, signal_handler)``). The stand-in below builds that
tree: an API server process whose spawned EngineCore takes a while to shut down, while the server itself dies
at once on SIGTERM (leaving an orphan, unless the whole group is stopped).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psutil

from specsweep.engines.server import group_members, process_group

STANDIN = """
import multiprocessing, os, signal, sys, time

def engine_core(pid_file):
    def shutdown(signum, frame):
        time.sleep(0.5)  # releasing the GPU takes a moment
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, shutdown)
    with open(pid_file, "w") as f:
        f.write(str(os.getpid()))
    while True:
        time.sleep(0.1)

if __name__ == "__main__":
    core = multiprocessing.get_context("spawn").Process(target=engine_core, args=(sys.argv[1],), name="EngineCore_DP0")
    core.start()
    while True:
        time.sleep(0.1)
"""


def test_engine_core_child_is_stopped_with_the_server(tmp_path: Path):
    script, pid_file = tmp_path / "api_server.py", tmp_path / "engine_core.pid"
    script.write_text(STANDIN)
    with process_group([sys.executable, str(script), str(pid_file)], grace_s=5.0) as server:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the stand-in's EngineCore never started"
            time.sleep(0.05)
        core = int(pid_file.read_text())
        # a multiprocessing child: the API server's child, in the server's group (what killpg reaches)
        assert psutil.Process(core).ppid() == server.pid
        assert os.getpgid(core) == server.pid and core in group_members(server.pid)
        created = psutil.Process(core).create_time()
    assert not group_members(server.pid)
    gone = not psutil.pid_exists(core) or psutil.Process(core).create_time() != created
    assert gone, f"EngineCore {core} outlived the teardown"
