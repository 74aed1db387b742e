"""The conda env file and the pip pins must list the same packages at the same versions."""

from __future__ import annotations

from pathlib import Path

import yaml

ENVS = Path(__file__).resolve().parents[2] / "envs"


def _pins(lines):
    return {line.split("==")[0].lower(): line.split("==")[1] for line in lines if "==" in line}


def test_conda_and_pip_pins_agree():
    requirements = [ln.split("#")[0].strip() for ln in (ENVS / "requirements.txt").read_text().splitlines()]
    conda = yaml.safe_load((ENVS / "specsweep.yaml").read_text())
    pip_section = next(d["pip"] for d in conda["dependencies"] if isinstance(d, dict))
    assert _pins(requirements) == _pins(pip_section)
    assert len(_pins(requirements)) >= 10
