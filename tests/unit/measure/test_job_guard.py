"""The process walk behind 'a job dies with its Snakemake' and '--unlock only when nothing else runs here'."""

import os
import subprocess
import sys
import time

from specsweep.measure.job_guard import ancestors, is_snakemake, other_runs_in


def test_snakemake_command_lines_are_recognised():
    assert is_snakemake(["/venv/bin/snakemake", "--cores", "1"])
    assert is_snakemake(["/usr/bin/python3", "-m", "snakemake", "all"])
    assert is_snakemake(["/usr/bin/python3", "/venv/bin/snakemake", "all"])
    assert not is_snakemake(["python", "/w/.snakemake/scripts/tmpab12.bench_configuration.py"])
    assert not is_snakemake([""])


def test_a_live_run_in_the_folder_is_found_and_this_process_is_not(tmp_path):
    assert os.getppid() in ancestors()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "-m", "snakemake"], cwd=tmp_path)
    try:
        # argv[1:3] of this child is not '-m snakemake': a plain python in the folder is not a run
        assert other_runs_in(tmp_path) == []
    finally:
        child.kill()
        child.wait()
    fake = tmp_path / "bin" / "snakemake"
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(30)\n")
    fake.chmod(0o755)
    child = subprocess.Popen([str(fake), "--cores", "1"], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 10
        while not (found := other_runs_in(tmp_path)) and time.monotonic() < deadline:  # until it has exec'd
            time.sleep(0.05)
        assert len(found) == 1 and found[0].startswith(f"pid {child.pid}: ")
        assert other_runs_in(tmp_path / "bin") == []
    finally:
        child.kill()
        child.wait()
