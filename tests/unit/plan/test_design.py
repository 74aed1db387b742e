"""The sweep's design: bracketing adds the end baseline, ordered and prioritised; a job's configurations."""

from __future__ import annotations

import dataclasses

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
    priorities = design.session_priorities(configurations)
    assert priorities["baseline"] > max(p for name, p in priorities.items() if name != "baseline")


def test_sessions_are_instances_interleaved_in_rounds_each_its_own_shuffle_the_baseline_among_them(default_config):
    configurations = design.with_sessions(expand(validate_schema(default_config)), 3)
    names = list(expand(validate_schema(default_config)))
    assert set(configurations) == {design.session_name(n, k) for n in names for k in (1, 2, 3)}
    third = configurations["ngram-m8-s3"]
    assert third.session_of == "ngram-m8" and third.args == configurations["ngram-m8"].args and not third.baseline
    assert configurations["baseline-s2"].compared_with == "baseline" and not configurations["baseline-s2"].baseline
    assert design.sessions_of(configurations)["ngram-m8"] == ["ngram-m8", "ngram-m8-s2", "ngram-m8-s3"]
    assert list(design.measured_configurations(configurations)) == names
    order = design.session_order(configurations)
    assert len(order) == 3 * len(names)
    rounds = [order[k * len(names) : (k + 1) * len(names)] for k in range(3)]
    for k, members in enumerate(rounds, start=1):  # every configuration's session k before any k + 1
        assert {configurations[n].session_of or n for n in members} == set(names)
        assert all(n == design.session_name(configurations[n].session_of or n, k) for n in members)
    # each round its own seeded shuffle of every configuration, the baseline too: no fixed position for anyone
    shuffled = [[configurations[n].session_of or n for n in r] for r in rounds]
    assert shuffled[0] != names and len({tuple(r) for r in shuffled}) == 3
    assert [r.index("baseline") for r in shuffled] != [0, 0, 0] and shuffled[-1][-1] != "baseline"
    assert design.session_order(configurations) == order  # seeded: the same sweep, the same order
    priorities = design.session_priorities(configurations)
    assert [n for n, _ in sorted(priorities.items(), key=lambda item: -item[1])] == order
    with pytest.raises(ValueError, match="benchmark/sessions"):
        design.with_sessions({**configurations, "ngram-m8-s2": configurations["ngram-m8"]}, 2)


def test_a_job_gets_its_configurations_with_real_values_expanding_only_their_entries(default_config):
    config = validate_schema(default_config)
    config["benchmark"]["order"] = "bracket"
    config["configurations"]["baseline"]["env"] = {"HF_TOKEN": "real-secret"}
    config["benchmark"]["sessions"] = 2
    everything = design.configurations_of(config)
    assert everything["baseline-end"].session_of == "baseline"
    for name in ("ngram-m8", "baseline-end", "baseline", "ngram-m8-s2", "baseline-s2"):
        identity = everything[name].identity()  # what the job's params hold (secrets as fingerprints)
        assert design.configuration_for(config, identity) == everything[name]
    assert design.configuration_for(config, everything["baseline"].identity()).env["HF_TOKEN"] == "real-secret"
    config["configurations"]["broken"] = {"engine": "no-such-engine"}  # another entry is not expanded
    assert design.configuration_for(config, everything["ngram-m8"].identity()) == everything["ngram-m8"]
    assert list(design.configurations_for(config, [c.identity() for c in everything.values()])) == list(everything)


def test_the_order_is_seeded_by_the_sweeps_content_not_by_its_size(default_config):
    # issue 36 item 7: with one seed for every sweep, the 4th of 4-7 configurations always ran first
    base = expand(validate_schema(default_config))
    firsts = set()
    for sweep in range(12):
        renamed = {f"{name}-{sweep}": dataclasses.replace(c, name=f"{name}-{sweep}") for name, c in base.items()}
        order = design.session_order(renamed)
        firsts.add(list(renamed).index(order[0]))
        assert design.session_order(dict(renamed)) == order  # rebuilt from the config alone
    assert len(firsts) > 1
    changed = {**base, "baseline": dataclasses.replace(base["baseline"], args={"-t": 3})}
    assert design.order_seed(changed) != design.order_seed(base)  # parameters count, not only names


def test_confirmation_sessions_of_every_configuration_in_seeded_rounds(default_config):
    configurations = design.with_sessions(expand(validate_schema(default_config)), 2)
    confirmations = design.confirmations_of(configurations, 3)
    names = list(design.measured_configurations(configurations))
    assert set(confirmations) == {design.confirmation_name(n, k) for n in names for k in (1, 2, 3)}
    fresh = confirmations[design.confirmation_name("baseline", 2)]
    assert fresh.session_of == "baseline" and not fresh.baseline and fresh.compared_with == "baseline"
    assert design.confirmations_of(configurations, 0) == {}
    # one fresh session each: its spread from the choosing sessions, which need two of some configuration
    assert set(design.confirmations_of(configurations, 1)) == {design.confirmation_name(n, 1) for n in names}
    with pytest.raises(ValueError, match=r"benchmark/confirm_sessions: 1 .* benchmark\.sessions >= 2"):
        design.confirmations_of(expand(validate_schema(default_config)), 1)
    priorities = design.confirmation_priorities(confirmations, design.order_seed(configurations))
    for n in names:  # every round before the next
        assert priorities[f"{n}-c1"] > max(priorities[f"{m}-c2"] for m in names)
    pairs = [(f"{n}-c{k}", f"baseline-c{k}") for n in names if n != "baseline" for k in (1, 2, 3)]
    assert {priorities[a] > priorities[b] for a, b in pairs} == {True, False}  # the order within a round varies


def test_a_confirmation_job_gets_its_configuration(default_config):
    config = validate_schema({**default_config, "benchmark": {**default_config["benchmark"], "confirm_sessions": 2}})
    confirmations = design.confirmations_of(design.configurations_of(config), 2)
    identity = confirmations["ngram-m8-c2"].identity()
    assert design.configuration_for(config, identity) == confirmations["ngram-m8-c2"]
