"""The unit tests mirror the package: the tests of ``specsweep/<stage>/<module>.py`` are in
``tests/unit/<stage>/test_<module>.py`` (a topic of a big module: ``test_<module>_<topic>.py``), so that
from a module's path one finds its tests, and from a test its module. Whole workflows, faults, the cluster
and the repository as a whole have folders of their own; no test module lies loose in tests/."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
PACKAGE = TESTS.parent / "src" / "specsweep"
FOLDERS = {"unit", "workflow", "faults", "slurm", "project"}


def module_of(test: Path, package: Path = PACKAGE, unit: Path = TESTS / "unit") -> Path | None:
    """The module a unit test file is named after: the longest ``_``-prefix of its name that is a module of
    the package folder its own folder mirrors; None if there is none."""
    folder = package.joinpath(*test.parent.relative_to(unit).parts)
    words = test.stem.removeprefix("test_").split("_")
    for end in range(len(words), 0, -1):
        if (candidate := folder / f"{'_'.join(words[:end])}.py").exists():
            return candidate
    return None


def test_every_unit_test_file_names_a_module_of_the_stage_it_mirrors():
    strays = [str(test.relative_to(TESTS)) for test in (TESTS / "unit").rglob("test_*.py") if module_of(test) is None]
    assert not strays, f"unit test files that name no module of the folder they mirror: {strays}"


def test_no_test_module_lies_loose_and_every_folder_is_known():
    assert not sorted(p.name for p in TESTS.glob("test_*.py")), "tests/test_*.py: move it to the folder it belongs in"
    folders = {p.parent.relative_to(TESTS).parts[0] for p in TESTS.rglob("test_*.py")}
    assert folders <= FOLDERS, folders - FOLDERS


@pytest.mark.parametrize(
    ("test", "module"),
    [
        ("analyse/test_replicates_noisy.py", "analyse/replicates.py"),
        ("engines/test_llamacpp_build.py", "engines/llamacpp_build.py"),
        ("test_jobs_damaged.py", "jobs.py"),
        ("parsers/test_nothing_here.py", None),
    ],
)
def test_the_module_of_a_test_is_its_longest_named_prefix(tmp_path, test, module):
    package, unit = tmp_path / "specsweep", tmp_path / "unit"
    for name in (
        "analyse/replicates.py",
        "engines/llamacpp.py",
        "engines/llamacpp_build.py",
        "jobs.py",
        "parsers/x.py",
    ):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).touch()
    found = module_of(unit / test, package, unit)
    assert found == (package / module if module else None)
