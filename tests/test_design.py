"""The sweep's design: bracketing adds the end baseline, ordered and prioritised; a job's configurations."""

from __future__ import annotations

import pytest

from specsweep.plan import design
from specsweep.plan.config import expand, validate_schema


def test_bracket_adds_the_end_baseline_ordered_after_everything(default_config):
    configurations = expand(validate_schema(default_config))
    assert design.with_end_baseline(configurations, "sequential") is configurations
    bracketed = design.with_end_baseline(configurations, "bracket")
    end = bracketed["baseline-end"]
    assert not end.baseline and end.args == configurations["baseline"].args and list(bracketed)[-1] == "baseline-end"
    inputs = design.runs_before("baseline-end", bracketed, [0, 1])
    assert "results/baseline/runs/run_1.json" in inputs and "results/draft-model/runs/run_0.json" in inputs
    assert not any(path.startswith("results/baseline-end/") for path in inputs)
    assert design.runs_before("ngram-m3", bracketed, [0, 1]) == []
    with pytest.raises(ValueError, match="benchmark/order"):
        design.with_end_baseline(configurations, "interleaved")


def test_the_baseline_session_is_scheduled_first(default_config):
    configurations = design.with_end_baseline(expand(validate_schema(default_config)), "bracket")
    priorities = {name: design.session_priority(name, configurations) for name in configurations}
    assert priorities["baseline"] > max(p for name, p in priorities.items() if name != "baseline")


def test_a_job_gets_its_configurations_with_real_values_expanding_only_their_entries(default_config):
    config = validate_schema(default_config)
    config["benchmark"]["order"] = "bracket"
    config["configurations"]["baseline"]["env"] = {"HF_TOKEN": "real-secret"}
    everything = design.configurations_of(config)
    for name in ("ngram-m8", "baseline-end", "baseline"):
        identity = everything[name].identity()  # what the job's params hold (secrets as fingerprints)
        assert design.configuration_for(config, identity) == everything[name]
    assert design.configuration_for(config, everything["baseline"].identity()).env["HF_TOKEN"] == "real-secret"
    config["configurations"]["broken"] = {"engine": "no-such-engine"}  # another entry is not expanded
    assert design.configuration_for(config, everything["ngram-m8"].identity()) == everything["ngram-m8"]
    assert list(design.configurations_for(config, [c.identity() for c in everything.values()])) == list(everything)
