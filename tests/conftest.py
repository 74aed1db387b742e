from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import schedule
import yaml
from checkout_guard import CheckoutGuard
from support import RealEngine, quick_scontrol

REPO = Path(__file__).resolve().parents[1]
SLURM_TESTS = REPO / "tests" / "slurm"
SCONTROL_DIR = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    # No test reads or writes the checkout's results/, logs/ or .snakemake/ (tests/checkout_guard.py).
    # Under pytest-xdist, tests run in the workers (they watch) and the controller compares the snapshot.
    worker = hasattr(config, "workerinput")
    controller = not worker and bool(getattr(config.option, "numprocesses", None))
    if not config.pluginmanager.is_blocked("checkout-guard"):  # (-p no:checkout-guard: not even its snapshot walk)
        guard = CheckoutGuard(REPO, watch=sys.platform == "linux" and not controller, compare=not worker)
        config.pluginmanager.register(guard, "checkout-guard")
    # Every process the suite starts finds the quick scontrol first (tests/support.py says why).
    config.stash[SCONTROL_DIR] = folder = Path(tempfile.mkdtemp(prefix="specsweep-tests-bin-"))
    quick_scontrol(folder)
    os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


def pytest_unconfigure(config: pytest.Config) -> None:
    if folder := config.stash.get(SCONTROL_DIR, None):
        os.environ["PATH"] = os.environ["PATH"].removeprefix(f"{folder}{os.pathsep}")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)  # before -m deselects (the slurm mark)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A mark in tests/slurm/conftest.py would not reach its tests (pytest reads pytestmark of test modules).
    for item in items:
        if SLURM_TESTS in item.path.parents:
            item.add_marker(pytest.mark.slurm)
    schedule.order(items)


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    return schedule.make_scheduler(config, log)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("quiet") and os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.fail(
            "a `quiet` test asserts on measured speed or timing and must have the machine to itself: run it "
            'without -n (`pytest -m quiet`) and the rest in parallel (`pytest -m "not quiet" -n <workers>`), as '
            "`make test` does",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def example_campaign():
    """Loads a config/examples/ campaign as the workflow reads it: validated (defaults filled), expanded."""
    from specsweep.plan import config as sweep_config

    def load(name: str) -> tuple[dict, dict]:
        config = sweep_config.validate_schema(sweep_config.load(REPO / "config" / "examples" / name))
        return config, sweep_config.expand(config)

    return load


@pytest.fixture
def default_config() -> dict:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


@pytest.fixture(scope="session")
def real_engine() -> RealEngine:
    """The engine tests' llama-server and model, built and fetched first when the cache lacks them."""
    return RealEngine.obtain(sys.stderr)
