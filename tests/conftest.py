from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


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
