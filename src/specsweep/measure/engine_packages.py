"""The engine's own package versions as the server's Python sees them.

Provenance's package list (``machine.snapshot``) is read in the job's Python, but an engine installed for the
node only (``pip install --target SITE`` with ``PYTHONPATH=SITE`` in the engine's environment, as vLLM 0.25.0
was on the H200) is invisible there: launch.json had no ``vllm`` among its packages while the server
reported 0.25.0. So the server's interpreter is asked, under the server's environment, before it starts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

ASK = (
    "import importlib.metadata as m, json, sys\n"
    "found = {}\n"
    "for name in sys.argv[1:]:\n"
    "    try: found[name] = m.version(name)\n"
    "    except m.PackageNotFoundError: pass\n"
    "print(json.dumps(found))\n"
)
TIMEOUT_S = 30.0


def interpreter(argv: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The Python that runs ``argv``: its first word when that is a Python, else the ``#!`` line of the
    console script it names (``vllm serve``); None for a compiled server (llama-server)."""
    if not argv:
        return None
    program = shutil.which(argv[0], path=env.get("PATH", os.defpath)) or argv[0]
    if Path(program).name.startswith("python"):
        return program
    try:
        with open(program, "rb") as handle:
            first = handle.readline(512).decode(errors="replace")
    except OSError:
        return None
    words = first[2:].split() if first.startswith("#!") else []
    if words and Path(words[0]).name == "env":
        words = words[1:]
    return words[0] if words and Path(words[0]).name.startswith("python") else None


def versions_as_launched(argv: Sequence[str], env: Mapping[str, str], names: Sequence[str]) -> dict[str, str]:
    """``{package: version}`` of ``names`` found by the server's interpreter under the server's environment;
    empty when there is no such interpreter or it cannot say (never raises: this is provenance, not a check)."""
    python = interpreter(argv, env)
    if python is None or not names:
        return {}
    try:
        done = subprocess.run(
            [python, "-c", ASK, *names],
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        found = json.loads(done.stdout) if done.returncode == 0 else {}
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}
