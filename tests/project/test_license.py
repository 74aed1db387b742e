"""The repository carries the license its pyproject.toml declares."""

import tomllib

from conftest import REPO


def test_license_file_matches_the_declared_license():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["license"]
    assert declared == "MIT"
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License\n") and "Permission is hereby granted, free of charge" in text
