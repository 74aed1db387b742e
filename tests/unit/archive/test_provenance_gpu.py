"""GPU settings that change speed and energy (power limit, application clocks, persistence mode) in the
provenance: read from a real H200's `nvidia-smi -q`, and a warning when configurations were launched under
different ones."""

from __future__ import annotations

import copy
from pathlib import Path

from specsweep.archive import provenance
from specsweep.measure import machine

H200_Q = Path(__file__).resolve().parents[2] / "data" / "nvidia-smi" / "h200-q.txt"


def _snapshot() -> dict:
    return {"gpus": {"nvidia_smi_q": machine.parse_nvidia_smi_q(H200_Q.read_text())}}  # before settings existed


def test_settings_of_a_real_h200():
    (settings,) = machine.settings_of(_snapshot())
    assert settings["product"] == "NVIDIA H200" and settings["persistence_mode"] == "Enabled"
    assert settings["power_limit"] == "700.00 W" and settings["default_power_limit"] == "700.00 W"
    assert settings["applications_clocks"] == {"graphics": "1980 MHz", "memory": "3201 MHz"}
    assert machine.power_limits(_snapshot()) == {"0": "700.00 W"}
    assert machine.settings_of({"gpus": None}) == [] and machine.power_limits(None) == {}


def test_the_sweep_records_the_settings_at_its_start_and_warns_of_a_changed_power_limit():
    capped = _snapshot()
    settings = machine.settings_of(capped)
    settings[0]["power_limit"] = "500.00 W"
    capped = {"gpus": {"settings": settings}}
    configurations = {
        "baseline": {"name": "baseline", "started_at": "2026-12-01T10:00:00Z", "machine": _snapshot()},
        "ngram": {"name": "ngram", "started_at": "2026-12-01T10:05:00Z", "machine": copy.deepcopy(capped)},
    }
    found = provenance.gpu_settings_at_start(configurations)
    assert found["gpu_settings_at_start"][0]["power_limit"] == "700.00 W"
    assert found["gpu_settings_warnings"] == [
        "ngram: GPU power limit ['500.00 W'] differs from baseline's ['700.00 W']: their energy and speed are "
        "not comparable"
    ]
    configurations["ngram"]["machine"] = _snapshot()
    assert provenance.gpu_settings_at_start(configurations)["gpu_settings_warnings"] == []
