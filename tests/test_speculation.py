"""Speculation counts: the one derivation of acceptance rate and accept length, per run and summed."""

from __future__ import annotations

import json
import math

from specsweep.record.speculation import SpeculationCounts, total


def test_ratios_are_derived_from_the_counts():
    counts = SpeculationCounts(drafted=400, accepted=300, emitted=500, verify_steps=100)
    assert counts.acceptance_rate == 0.75 and counts.accept_length == 4.0
    assert math.isnan(SpeculationCounts(drafted=0, accepted=0, emitted=1).acceptance_rate)
    assert math.isnan(SpeculationCounts(drafted=4, accepted=3, emitted=5).accept_length)  # no verify steps known


def test_the_json_ratios_are_written_but_never_read_back():
    counts = SpeculationCounts(drafted=40, accepted=30, emitted=64, verify_steps=10, source="/metrics")
    data = json.loads(json.dumps(counts.to_json()))
    assert data["acceptance_rate"] == 0.75
    assert SpeculationCounts.from_json({**data, "acceptance_rate": 0.1}) == counts  # an engine's ratio is ignored


def test_a_total_is_unknown_when_one_run_did_not_say_how_many_it_drafted():
    runs = [
        SpeculationCounts(drafted=40, accepted=30, emitted=64, verify_steps=10, source="response"),
        SpeculationCounts(drafted=None, accepted=20, emitted=64, verify_steps=10, source="/metrics"),
    ]
    summed = total(runs)
    assert summed.drafted is None and summed.accepted == 50 and summed.verify_steps == 20
    assert summed.accept_length == 1 + 50 / 20 and summed.source == "/metrics; response"
    assert total([]) is None
