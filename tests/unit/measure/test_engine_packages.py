"""The engine's package versions as the server's own Python sees them (a PYTHONPATH install of vLLM)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from specsweep.measure.engine_packages import interpreter, versions_as_launched


def site_with(tmp_path: Path, name: str, version: str) -> Path:
    """A ``pip install --target`` folder holding only the package's metadata."""
    site = tmp_path / "site"
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return site


def test_a_package_on_the_engines_pythonpath_is_found(tmp_path):
    site = site_with(tmp_path, "vllmstandin", "0.25.0")
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(site)}
    argv = [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", "/m"]
    assert versions_as_launched(argv, env, ["vllmstandin", "absent-pkg"]) == {"vllmstandin": "0.25.0"}
    # the job's own environment does not see it: this is why it is asked under the server's
    assert versions_as_launched(argv, {"PATH": os.environ["PATH"]}, ["vllmstandin"]) == {}


def test_a_console_script_is_run_by_its_shebang(tmp_path):
    script = tmp_path / "bin" / "vllm"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\nimport sys\n")
    script.chmod(0o755)
    env = {"PATH": f"{script.parent}:{os.environ['PATH']}"}
    assert interpreter(["vllm", "serve"], env) == sys.executable
    compiled = tmp_path / "llama-server"
    compiled.write_bytes(b"\x7fELF\x02\x01")
    assert interpreter([str(compiled), "-m", "x"], env) is None
    assert versions_as_launched([str(compiled)], env, ["vllm"]) == {}
