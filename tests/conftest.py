from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def default_config() -> dict:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())
