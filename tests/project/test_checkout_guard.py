"""The checkout guard (tests/checkout_guard.py) fails a test that uses the checkout's results/, logs/ or
.snakemake/, and passes one that works in a folder of its own: a pytest run on a stand-in checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parents[1]

CONFTEST = """
from pathlib import Path
from checkout_guard import CheckoutGuard

def pytest_configure(config):
    config.pluginmanager.register(CheckoutGuard(Path({root!r}), watch={watch}), "checkout-guard")
"""

TESTS = """
import os
from pathlib import Path

ROOT = Path({root!r})

def test_writes_a_result():
    (ROOT / "results" / "summary.csv").write_text("configuration\\n")

def test_reads_a_log():
    (ROOT / "logs" / "bench" / "cfg.log").read_text()

def test_runs_snakemake_in_the_checkout():
    (ROOT / ".snakemake" / "locks").mkdir(parents=True)

def test_removes_a_folder():
    import shutil

    shutil.rmtree(ROOT / "logs" / "bench")

def test_dates_a_summary_back():
    os.utime(ROOT / "results" / "old.csv", (0, 0))

def test_works_in_a_folder_of_its_own(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "summary.csv").write_text((ROOT / "config.yaml").read_text())
"""


def checkout(tmp_path: Path) -> Path:
    """A checkout after a sweep: a results/ and a logs/ with files in them, a config beside them."""
    root = tmp_path / "checkout"
    (root / "results").mkdir(parents=True)
    (root / "results" / "old.csv").write_text("configuration\n")
    (root / "logs" / "bench").mkdir(parents=True)
    (root / "logs" / "bench" / "cfg.log").write_text("ready\n")
    (root / "config.yaml").write_text("runs: 1\n")
    return root


def run_pytest(tmp_path: Path, root: Path, tests: str, watch: bool) -> subprocess.CompletedProcess[str]:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST.format(root=str(root), watch=watch))
    (suite / "test_uses.py").write_text(tests)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", str(suite)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=suite,
        env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
    )


def test_each_test_that_uses_the_checkout_fails_naming_the_paths(tmp_path):
    root = checkout(tmp_path)
    done = run_pytest(tmp_path, root, TESTS.format(root=str(root)), watch=True)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    for test, path in [
        ("test_writes_a_result", "results/summary.csv: created"),
        ("test_reads_a_log", "logs/bench/cfg.log: opened"),
        ("test_runs_snakemake_in_the_checkout", ".snakemake/: created"),
        ("test_dates_a_summary_back", "results/old.csv: changed"),
        ("test_removes_a_folder", "logs/bench/: removed"),
    ]:
        assert f"ERROR test_uses.py::{test} - Failed" in out, out
        assert f"test_uses.py::{test} (or a process running beside it) used the checkout's own" in out
        assert f"\n  {path}\n" in out, out
    assert "PASSED test_uses.py::test_works_in_a_folder_of_its_own" in out
    assert "ERROR test_uses.py::test_works_in_a_folder_of_its_own" not in out
    assert "the test session used the checkout's own" in out  # and the snapshot at the end agrees


def test_without_inotify_the_session_fails_on_the_snapshot(tmp_path):
    root = checkout(tmp_path)
    only = "from pathlib import Path\n\ndef test_writes_a_result():\n"
    only += f"    (Path({str(root)!r}) / 'results' / 'old.csv').write_text('changed')\n"
    done = run_pytest(tmp_path, root, only, watch=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "PASSED test_uses.py::test_writes_a_result" in done.stdout
    assert "the test session used the checkout's own" in done.stdout
    assert "results/old.csv: changed" in done.stdout


def test_a_session_that_leaves_the_checkout_alone_passes(tmp_path):
    root = checkout(tmp_path)
    done = run_pytest(tmp_path, root, "def test_nothing(tmp_path):\n    (tmp_path / 'x').write_text('x')\n", watch=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "used the checkout's own" not in done.stdout


def test_listing_the_guarded_folders_is_not_using_them(tmp_path):
    # After `make run`, any Snakemake a test starts lists results/ and logs/: the Snakefile's folder is on
    # sys.path and its plugin discovery (pkgutil.iter_modules) lists every folder there. Nothing under them
    # is read or written, so nothing fails.
    root = checkout(tmp_path)
    lists = "import os, pkgutil\nfrom pathlib import Path\n\ndef test_lists(tmp_path):\n"
    lists += f"    root = Path({str(root)!r})\n"
    lists += "    list(pkgutil.iter_modules([str(root)]))\n"
    lists += "    for folder in ('results', 'logs', 'logs/bench'):\n        os.listdir(root / folder)\n"
    lists += "    (root / 'results' / 'old.csv').stat()\n"
    done = run_pytest(tmp_path, root, lists, watch=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "used the checkout's own" not in done.stdout
