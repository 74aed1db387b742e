"""Every archive committed under docs/examples/ rebuilds with the command its own README gives."""

import io
from pathlib import Path

import pytest

from specsweep import archive

REPO = Path(__file__).resolve().parents[1]
ARCHIVES = sorted((REPO / "docs" / "examples").glob("*/*.tar.gz"))


def test_there_are_example_archives():
    assert ARCHIVES, "docs/examples/ holds no archive: nothing below would be checked"


@pytest.mark.parametrize("path", ARCHIVES, ids=[p.parent.name for p in ARCHIVES])
def test_a_committed_example_archive_rebuilds_in_an_empty_folder(path, tmp_path):
    log = io.StringIO()
    problems = archive.rebuild_in(path, tmp_path, log)
    assert problems == [], log.getvalue()[-4000:]
