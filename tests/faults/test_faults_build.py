"""Interrupting the engine build leaves no compiler running and no build a later run would trust.

A toy source distribution stands in for llama.cpp's (whose real build takes 8-11 min): its
`llama-server` target is a CMake custom target that sleeps, so the interrupt always lands while
ninja is running, exactly where a real build spends its time.
"""

from __future__ import annotations

import hashlib
import io
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import psutil
import pytest
from conftest import leftovers, wait_for

SLEEP = "97"  # an unusual duration, to find the build's own sleeping child in the process table
CMAKE = """cmake_minimum_required(VERSION 3.16)
project(toy NONE)
add_custom_target(llama-server
  COMMAND ${CMAKE_COMMAND} -E sleep $ENV{TOY_SLEEP}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/bin
  COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_BINARY_DIR}/bin/llama-server)
"""


@pytest.fixture
def toy(tmp_path: Path) -> tuple[Path, str]:
    downloads = tmp_path / "cache" / "downloads"
    downloads.mkdir(parents=True)
    sdist = downloads / "toy_pkg-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        data = CMAKE.encode()
        member = tarfile.TarInfo("toy_pkg-1.0/tree/CMakeLists.txt")
        member.size = len(data)
        archive.addfile(member, io.BytesIO(data))
    return tmp_path / "cache", hashlib.sha256(sdist.read_bytes()).hexdigest()


def driver(cache: Path, sha: str, sleep: str) -> subprocess.Popen[str]:
    code = (
        "from specsweep.engines.llamacpp_build import SourcePin, ensure_llama_server\n"
        f"ensure_llama_server(SourcePin('toy-pkg', '1.0', '{sha}', 'tree', 1, 'toy'), 'cpu', jobs=1)\n"
    )
    env = {**os.environ, "SPECSWEEP_CACHE": str(cache), "TOY_SLEEP": sleep}
    return subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        start_new_session=True,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def sleepers() -> list[psutil.Process]:
    return leftovers(f"-E sleep {SLEEP}")  # the build's own sleeping step, zombies excluded


@pytest.mark.parametrize("how", ["SIGINT to the process group (Ctrl-C)", "SIGTERM to the build process only"])
def test_interrupted_build_stops_its_compilers_and_rebuilds_cleanly(toy, how):
    cache, sha = toy
    build = driver(cache, sha, SLEEP)
    try:
        assert wait_for(sleepers, 60), "the build never reached its long step"
        started = time.monotonic()
        if how.startswith("SIGINT"):
            os.killpg(build.pid, signal.SIGINT)
        else:
            build.send_signal(signal.SIGTERM)
        build.wait(timeout=20)
        assert wait_for(lambda: not sleepers(), 10), f"still running: {sleepers()}"
        stopped_after = time.monotonic() - started
    finally:
        for process in sleepers():
            process.kill()
        if build.poll() is None:
            os.killpg(build.pid, signal.SIGKILL)
    output = build.stdout.read() if build.stdout else ""
    assert build.returncode != 0, output
    assert stopped_after < 10
    assert not list(cache.glob("llama.cpp/*/build.json")), "an interrupted build must not be recorded"
    # The next run starts the build again from scratch and finishes it.
    again = driver(cache, sha, "0")
    out, _ = again.communicate(timeout=120)
    assert again.returncode == 0, out
    records = list(cache.glob("llama.cpp/*/build.json"))
    assert len(records) == 1 and (records[0].parent / "build" / "bin" / "llama-server").exists()
