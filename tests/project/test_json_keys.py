"""One key inside a JSON flag (vLLM --speculative-config) as a grid axis or a factor level, with short names."""

from __future__ import annotations

import copy
import json

import pytest

from specsweep.plan import config as sweep_config
from specsweep.plan.config import ConfigError

NGRAM = '{"method": "ngram", "prompt_lookup_max": 4, "prompt_lookup_min": 2}'


@pytest.fixture(scope="module")
def vllm_config(example_campaign):
    return example_campaign("vllm-eagle3.yaml")[0]


def expanded(config: dict, configurations: dict, factors: dict | None = None) -> dict:
    changed = copy.deepcopy(config)
    changed["configurations"] = configurations if factors else {"baseline": {"baseline": True}, **configurations}
    if factors is not None:
        changed["factors"] = factors
    return sweep_config.expand(sweep_config.validate_schema(changed))


def spec(configuration) -> dict:
    return json.loads(configuration.args["--speculative-config"])


def test_a_grid_over_one_key_keeps_the_rest_fixed(vllm_config):
    grid = {"args": {"--speculative-config.num_speculative_tokens": [1, 3, 5]}}
    found = expanded(vllm_config, {"ngram": {"args": {"--speculative-config": NGRAM}, "grid": grid}})
    assert sorted(found) == ["baseline", "ngram-k-1", "ngram-k-3", "ngram-k-5"]  # short names
    assert spec(found["ngram-k-3"]) == {**json.loads(NGRAM), "num_speculative_tokens": 3}
    assert not any("." in flag for c in found.values() for flag in c.args)  # no dotted flag reaches argv


def test_the_example_campaign_sweeps_the_key(example_campaign):
    _, configurations = example_campaign("vllm-eagle3.yaml")
    assert sorted(configurations) == ["baseline", "eagle3-k1", "eagle3-k3", "eagle3-k5"]
    assert spec(configurations["eagle3-k5"]) == {
        "method": "eagle3",
        "model": "{draft_model}",
        "num_speculative_tokens": 5,
    }


def test_factor_levels_set_a_key_or_drop_the_flag(vllm_config):
    factors = {
        "depth": {
            "none": {"baseline": True, "--speculative-config": None},
            "k2": {"--speculative-config.num_speculative_tokens": 2},
            "k5": {"--speculative-config.num_speculative_tokens": 5},
        },
        "lookup": {"short": {"--speculative-config.prompt_lookup_max": 2}, "default": {}},
    }
    entry = {"args": {"--speculative-config": NGRAM}, "factors": ["depth", "lookup"], "name": "{depth}-{lookup}"}
    found = expanded(vllm_config, {"ngram": entry}, factors)
    assert "--speculative-config" not in {k for k, v in found["none-short"].args.items() if v is not None}
    assert spec(found["k2-short"]) == {**json.loads(NGRAM), "num_speculative_tokens": 2, "prompt_lookup_max": 2}
    assert spec(found["k5-default"])["prompt_lookup_max"] == 4


def test_a_key_without_its_object_is_refused_with_the_fix(vllm_config):
    grid = {"args": {"--speculative-config.num_speculative_tokens": [1, 3]}}
    with pytest.raises(ConfigError, match=r"ngram-k-1.*sets a key inside --speculative-config, which this"):
        expanded(vllm_config, {"ngram": {"grid": grid}})
    with pytest.raises(ConfigError, match=r"args/--speculative-config: not valid JSON"):
        expanded(vllm_config, {"ngram": {"args": {"--speculative-config": "{method: ngram}"}, "grid": grid}})
