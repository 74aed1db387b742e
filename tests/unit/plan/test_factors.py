"""Factors whose levels are bundles of settings: crossing, null, naming, baselines, errors before start."""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from specsweep.plan import config as sweep_config
from specsweep.plan.config import ConfigError
from specsweep.plan.factors import baselines_by_configuration, cross, parse_factors

FACTORS = {
    "depth": {
        "off": {"baseline": True, "--spec": None},
        "d1": {"--steps": 1, "--tokens": 2},
        "d2": {"--steps": 2, "--tokens": 3},
    },
    "tuning": {"plain": {"env": {"TUNE_A": None, "TUNE_B": None}}, "tuned": {"env": {"TUNE_A": "x", "TUNE_B": 7}}},
}


def sweep(default_config: dict, **entry) -> dict:
    config = copy.deepcopy(default_config)
    config["factors"] = copy.deepcopy(FACTORS)
    config["configurations"] = {"spec": {"args": {"--spec": "on"}, "factors": ["depth", "tuning"], **entry}}
    return sweep_config.validate_schema(config)


def test_levels_move_together_and_cross(default_config):
    configurations = sweep_config.expand(sweep(default_config, name="s-{depth}-{tuning}"))
    assert list(configurations) == [
        "s-off-plain",
        "s-off-tuned",
        "s-d1-plain",
        "s-d1-tuned",
        "s-d2-plain",
        "s-d2-tuned",
    ]
    tuned = configurations["s-d2-tuned"]
    assert (tuned.args["--steps"], tuned.args["--tokens"], tuned.args["--spec"]) == (2, 3, "on")
    assert tuned.env["TUNE_A"] == "x" and tuned.env["TUNE_B"] == "7" and tuned.unset_env == []
    assert tuned.levels == {"depth": "d2", "tuning": "tuned"} and not tuned.baseline


def test_null_unsets_a_flag_and_a_variable(default_config):
    plain_off = sweep_config.expand(sweep(default_config))["spec-off-plain"]
    assert plain_off.args["--spec"] is None  # not passed (render_flags leaves None out)
    assert "TUNE_A" not in plain_off.env and plain_off.unset_env == ["TUNE_A", "TUNE_B"]
    assert plain_off.baseline and plain_off.baseline_factors == ["depth"]


def test_each_configuration_gets_the_baseline_sharing_its_other_levels(default_config):
    compared = baselines_by_configuration(sweep_config.expand(sweep(default_config)))
    assert compared == {
        "spec-off-plain": None,
        "spec-off-tuned": None,
        "spec-d1-plain": "spec-off-plain",
        "spec-d1-tuned": "spec-off-tuned",
        "spec-d2-plain": "spec-off-plain",
        "spec-d2-tuned": "spec-off-tuned",
    }


def test_a_named_baseline_wins_and_must_be_a_baseline(default_config):
    config = sweep(default_config)
    config["configurations"]["other"] = {"compared_with": "spec-off-tuned"}
    assert baselines_by_configuration(sweep_config.expand(config))["other"] == "spec-off-tuned"
    config["configurations"]["other"] = {"compared_with": "spec-d1-plain"}
    with pytest.raises(ConfigError, match=r"configuration 'other': compared_with 'spec-d1-plain' is not a baseline"):
        sweep_config.expand(config)


def test_a_configuration_without_a_matching_baseline_is_named(default_config):
    config = sweep(default_config)
    config["configurations"]["loose"] = {"args": {"--x": 1}}  # no factors: every baseline "shares" nothing
    with pytest.raises(
        ConfigError,
        match=r"configuration 'loose' \(no factor levels\): it needs exactly one "
        r"baseline .* several do \(spec-off-plain, spec-off-tuned\).*compared_with",
    ):
        sweep_config.expand(config)


def test_two_factors_setting_one_key_are_rejected_naming_configuration_and_key():
    factors = parse_factors({"a": {"x": {"--flag": 1}}, "b": {"y": {"env": {"V": 1}}, "z": {"--flag": 2}}})
    assert [p.name for p in cross("e", ["a"], factors, None)] == ["e-x"]
    with pytest.raises(
        ConfigError,
        match=r"configurations/e: configuration 'e-x-z': factors 'a' and 'b' both set "
        r"--flag",
    ):
        cross("e", ["a", "b"], factors, None)


def test_bad_references_and_templates_name_the_key(default_config):
    with pytest.raises(ConfigError, match=r"configurations/spec/factors: 'nope' is not defined under 'factors'"):
        sweep_config.expand(sweep(default_config, factors=["depth", "nope"]))
    with pytest.raises(ConfigError, match=r"configurations/spec/name: 's-\{speed\}' has placeholder \{speed\}"):
        sweep_config.expand(sweep(default_config, name="s-{speed}"))
    with pytest.raises(ConfigError, match=r"configurations/spec: expands to 'same'"):
        sweep_config.expand(sweep(default_config, name="same"))
    with pytest.raises(ConfigError, match=r"configurations/spec: has both 'grid' and 'factors'"):
        sweep_config.expand(sweep(default_config, grid={"args": {"-t": [1, 2]}}))


def test_schema_rejects_a_level_key_that_is_neither_flag_nor_env(default_config):
    config = copy.deepcopy(default_config)
    config["factors"] = {"depth": {"d1": {"steps": 1}}}
    with pytest.raises(ConfigError, match=r"factors/depth/d1"):
        sweep_config.validate_schema(config)


def test_existing_sweeps_keep_their_identity(default_config):
    """New fields at their defaults stay out of the params, so finished measurements do not rerun."""
    configurations = sweep_config.expand(sweep_config.validate_schema(copy.deepcopy(default_config)))
    identity = configurations["ngram-m3"].identity()
    assert not {"levels", "unset_env", "baseline_factors", "compared_with"} & set(identity)


def test_summary_compares_each_configuration_with_its_own_baseline(default_config):
    from run_records import runs_of

    from specsweep.analyse.aggregate import summarise

    configurations = sweep_config.expand(sweep(default_config))
    rates = {
        "spec-off-plain": 50.0,
        "spec-off-tuned": 100.0,
        "spec-d1-plain": 75.0,
        "spec-d1-tuned": 120.0,
        "spec-d2-plain": 60.0,
        "spec-d2-tuned": 90.0,
    }
    runs = runs_of(
        {name: [{"client": {"decode_tokens_per_s": rate + d}} for d in (-1, 0, 1)] for name, rate in rates.items()}
    )
    summary = summarise(configurations, runs, {}).set_index("configuration")
    assert summary.loc["spec-d1-tuned", "compared_with"] == "spec-off-tuned"
    # ratios of geometric means of the runs (one pass each): 1.2 and 1.5 up to the +-1 tok/s spread
    assert summary.loc["spec-d1-tuned", "speedup"] == pytest.approx(1.2, rel=1e-4)
    assert summary.loc["spec-d1-plain", "speedup"] == pytest.approx(1.5, rel=1e-4)
    assert summary.loc["spec-d2-tuned", "speedup_ci95_high"] < 1  # against 100, not 50
    assert summary.loc["spec-off-tuned", "speedup"] == 1.0 and pd.isna(summary.loc["spec-off-tuned", "compared_with"])


def test_a_secret_reference_inside_a_json_flag_key_is_refused():
    """{from_env: NAME} under --flag.key reached the engine as the text {"from_env": "NAME"} inside the JSON."""
    import pytest

    from specsweep.plan.factors import apply_json_keys
    from specsweep.record.errors import ConfigError

    args = {"--speculative-config": '{"method": "eagle3"}', "--speculative-config.model": {"from_env": "MYREF"}}
    with pytest.raises(ConfigError, match=r"--speculative-config\.model: a \{from_env: MYREF\} cannot stand"):
        apply_json_keys(args, "configurations/e")
