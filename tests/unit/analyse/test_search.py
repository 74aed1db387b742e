"""analyse/search.py: the next value worth measuring of the swept speculative flag."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from specsweep.analyse import search
from specsweep.record.configuration import Configuration


def test_between_a_winning_2_and_a_losing_5_it_proposes_3():
    found = search.propose({0: 1.0, 1: 1.10, 2: 1.15, 5: 1.05})
    assert found.best == 2
    assert found.next_values == (3,)
    assert "between the best 2 and 5" in found.why


def test_the_gap_below_the_best_is_narrowed_too():
    assert search.propose({0: 1.0, 4: 1.2, 5: 1.1}).next_values == (2,)


def test_the_predicted_optimum_inside_a_gap_is_preferred_to_the_middle():
    assert search.propose({0: 1.0, 2: 1.15, 8: 1.05}, predicted=3.2).next_values == (1, 3)
    # the middle, rounded towards the best, without it
    assert search.propose({0: 1.0, 2: 1.15, 8: 1.05}).next_values == (1, 5)


def test_a_prediction_outside_the_gaps_is_not_followed():
    assert search.propose({0: 1.0, 2: 1.15, 5: 1.05}, predicted=12.0).next_values == (1, 3)


def test_a_best_that_is_the_largest_measured_is_doubled():
    found = search.propose({0: 1.0, 1: 1.1, 2: 1.2})
    assert found.next_values == (4,)
    assert "may still rise" in found.why


def test_measured_neighbours_stop_the_search_and_say_confirm():
    found = search.propose({0: 1.0, 1: 1.1, 2: 1.2, 3: 1.15, 5: 1.0})
    assert found.next_values == ()
    assert "neighbours are measured" in found.why


def test_the_baseline_best_with_1_measured_needs_nothing_more():
    assert search.propose({0: 1.2, 1: 1.1, 3: 1.0}).next_values == ()


def test_the_baseline_is_the_lower_end_even_when_not_given():
    assert search.propose({3: 1.2, 4: 1.1}).next_values == (2,)


def test_next_values_is_the_union_of_the_levels_proposals():
    c1 = search.propose({0: 1.0, 2: 1.2, 5: 1.1})
    c16 = search.propose({0: 1.2, 2: 1.0, 5: 0.8})
    assert search.next_values([c1, c16]) == [1, 3]


def test_nothing_measured_is_an_error():
    with pytest.raises(ValueError, match="no measured value"):
        search.propose({})


def _configuration(name: str, value: int | None, group: str = "ngram", grid: bool = True) -> Configuration:
    args = {"--spec-type": "ngram-simple"} if value is not None else {}
    axes = {}
    if value is not None:
        (axes if grid else args)[FLAG] = value
    return Configuration(name, "llama", "llamacpp", value is None, {**args, **axes}, {}, axes, group)


FLAG = "--spec-ngram-simple-size-m"
ENTRIES = {
    "baseline": {"baseline": True},
    "ngram": {
        "args": {"--spec-type": "ngram-simple"},
        "grid": {"args": {FLAG: [2, 5]}, "name": "ngram-m{" + FLAG + "}"},
    },
}


def _sweep(rates: dict[str, float]) -> tuple[dict[str, dict[str, float]], dict[str, Configuration]]:
    """One level (single request) of the given rates, and the configurations: a baseline, a grid on FLAG."""
    values = {"baseline": None, "ngram-m1": 1, "ngram-m2": 2, "ngram-m5": 5}
    configurations = {
        name: _configuration(name, values[name], "baseline" if values[name] is None else "ngram") for name in rates
    }
    return {search.SINGLE_REQUEST: rates}, configurations


def test_each_value_gets_its_rate_and_the_baseline_is_0():
    levels, configurations = _sweep({"baseline": 100.0, "ngram-m2": 120.0, "ngram-m5": float("nan")})
    assert search.measured_values(levels[search.SINGLE_REQUEST], configurations, FLAG) == {
        0: ("baseline", 100.0),
        2: ("ngram-m2", 120.0),
    }


def test_the_levels_are_the_single_request_rate_and_each_load_levels_output_rate():
    summary = pd.DataFrame({"configuration": ["baseline", "ngram-m2"], "decode_tok_s_mean": [100.0, 120.0]})
    load = pd.DataFrame(
        {
            "configuration": ["baseline", "ngram-m2"] * 2,
            "load": ["c1", "c1", "c16", "c16"],
            "output_tok_s_mean": [1, 2, 3, 4],
        }
    )
    assert search.level_rates(summary, load) == {
        search.SINGLE_REQUEST: {"baseline": 100.0, "ngram-m2": 120.0},
        "c1": {"baseline": 1.0, "ngram-m2": 2.0},
        "c16": {"baseline": 3.0, "ngram-m2": 4.0},
    }
    assert list(search.level_rates(summary, None)) == [search.SINGLE_REQUEST]


def test_a_grid_axis_gets_the_new_values_in_its_list(tmp_path):
    levels, configurations = _sweep({"baseline": 100.0, "ngram-m2": 120.0, "ngram-m5": 110.0})
    shown = search.write(levels, configurations, ENTRIES, None, tmp_path / "next.json", tmp_path / "next.yaml")
    found = json.loads((tmp_path / "next.json").read_text())
    assert found["levels"][search.SINGLE_REQUEST]["best"] == 2 and found["next_values"] == [1, 3]
    assert yaml.safe_load((tmp_path / "next.yaml").read_text()) == {
        "configurations": {"ngram": {"grid": {"args": {FLAG: [1, 2, 3, 5]}}}}
    }
    assert "1, 3" in shown[0]
    assert shown[1].endswith(f"--configfile {search.DEFAULT_CONFIG} {tmp_path / 'next.yaml'}")
    assert search.conclusion_lines(tmp_path / "next.json") == [f"  {line}" for line in shown]
    assert (
        f"--configfile my.yaml {tmp_path / 'next.yaml'}"
        in search.conclusion_lines(tmp_path / "next.json", ["my.yaml"])[1]
    )


def test_the_next_round_is_every_levels_proposals_together(tmp_path):
    levels, configurations = _sweep({"baseline": 100.0, "ngram-m2": 120.0, "ngram-m5": 110.0})
    levels["c16"] = {"baseline": 100.0, "ngram-m2": 90.0, "ngram-m5": 80.0}  # no speculation best: 1 is open
    levels["c64"] = {"baseline": 100.0}  # one value: nothing to search at this level
    shown = search.write(levels, configurations, ENTRIES, None, tmp_path / "next.json", tmp_path / "next.yaml")
    found = json.loads((tmp_path / "next.json").read_text())
    assert found["levels"]["c16"]["best"] == 0 and found["levels"]["c16"]["next_values"] == [1]
    assert "c64" not in found["levels"]
    assert found["next_values"] == [1, 3]
    assert f"fastest measured at {search.SINGLE_REQUEST} 2, c16 0" in shown[0]


def test_the_cost_models_optimum_is_followed_at_the_single_request_level_only(tmp_path, monkeypatch):
    monkeypatch.setattr(search, "_predicted", lambda model, flag, group: 4.2)
    levels, configurations = _sweep({"baseline": 100.0, "ngram-m2": 120.0, "ngram-m5": 110.0})
    levels["c4"] = dict(levels[search.SINGLE_REQUEST])
    found = search.found(levels, configurations, None)
    assert found["levels"][search.SINGLE_REQUEST]["next_values"] == [1, 4]
    assert found["levels"]["c4"]["next_values"] == [1, 3]


def test_the_fragment_merged_into_the_config_expands_to_the_new_configurations(tmp_path):
    from snakemake.utils import update_config

    levels, configurations = _sweep({"baseline": 100.0, "ngram-m2": 120.0, "ngram-m5": 110.0})
    search.write(levels, configurations, ENTRIES, None, tmp_path / "next.json", tmp_path / "next.yaml")
    config = {"configurations": json.loads(json.dumps(ENTRIES))}
    update_config(config, yaml.safe_load((tmp_path / "next.yaml").read_text()))
    assert config["configurations"]["ngram"]["grid"] == {"args": {FLAG: [1, 2, 3, 5]}, "name": "ngram-m{" + FLAG + "}"}


def test_plain_entries_are_copied_with_the_new_value():
    entries = {"eagle": {"args": {"--spec-type": "ngram-simple", FLAG: 2}, "description": "eagle"}}
    configurations = {"eagle": _configuration("eagle", 2, group="eagle", grid=False)}
    assert search.fragment(entries, configurations, FLAG, [3]) == {
        "configurations": {
            "eagle-spec-ngram-simple-size-m3": {
                "args": {"--spec-type": "ngram-simple", FLAG: 3},
                "description": f"eagle; {FLAG} = 3 (search)",
            }
        }
    }


def test_measured_neighbours_write_no_round_and_say_confirm(tmp_path):
    levels, configurations = _sweep({"baseline": 100.0, "ngram-m1": 110.0, "ngram-m2": 105.0})
    shown = search.write(levels, configurations, ENTRIES, None, tmp_path / "next.json", tmp_path / "next.yaml")
    assert search.CONFIRM in shown[0]
    assert yaml.safe_load((tmp_path / "next.yaml").read_text()) == {}
    assert json.loads((tmp_path / "next.json").read_text())["next_round"] is None


def test_a_sweep_without_a_swept_flag_says_so(tmp_path):
    levels, configurations = _sweep({"baseline": 100.0, "ngram-m2": 120.0})
    shown = search.write(levels, configurations, ENTRIES, None, tmp_path / "next.json", tmp_path / "next.yaml")
    assert "varies no one speculative flag" in shown[0]
    assert search.conclusion_lines(tmp_path / "next.json") == []


def test_a_flag_set_by_factors_gets_its_values_but_no_round(tmp_path):
    levels, configurations = _sweep({"baseline": 100.0, "ngram-m2": 120.0, "ngram-m5": 110.0})
    entries = {**ENTRIES, "ngram": {"factors": ["size"]}}
    shown = search.write(levels, configurations, entries, None, tmp_path / "next.json", tmp_path / "next.yaml")
    assert "1, 3" in shown[0]
    assert (
        shown[1]
        == "  no next round written: configurations/ngram: the search extends grids and plain entries, not factors"
    )
    assert yaml.safe_load((tmp_path / "next.yaml").read_text()) == {}
