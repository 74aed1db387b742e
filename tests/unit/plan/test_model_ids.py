"""Hub model ids: passed as they are to engines that resolve them, refused with the fix elsewhere."""

from __future__ import annotations

import copy

import pytest

from specsweep.plan import config as sweep_config
from specsweep.plan.config import ConfigError
from specsweep.plan.launchplan import plan
from specsweep.plan.model_ids import check_model_ids
from specsweep.record.models import obtain

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture(scope="module")
def vllm_example(example_campaign):
    return example_campaign("vllm-eagle3.yaml")[0]


def with_models(config: dict, **models: dict) -> dict:
    changed = copy.deepcopy(config)
    changed["models"].update(models)
    return sweep_config.validate_schema(changed)


def test_a_hub_id_reaches_vllm_as_it_is(vllm_example):
    model = vllm_example["engines"]["vllm"]["model"]
    config = with_models(vllm_example, **{model: {"hub": LLAMA}})
    check_model_ids(config)
    configurations = sweep_config.expand(config)
    planned = plan(next(iter(configurations.values())), config["engines"]["vllm"], config["models"])
    assert planned["argv"][2] == LLAMA  # `vllm serve meta-llama/...`, not a folder under the working directory
    assert obtain(model, {"hub": LLAMA}) == {
        "name": model,
        "path": LLAMA,
        "source": "hub id, resolved by the engine",
        "identity": "id only",
    }


def test_an_id_given_as_a_path_is_refused_with_the_fix(vllm_example, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = vllm_example["engines"]["vllm"]["model"]
    config = with_models(vllm_example, **{model: {"path": LLAMA}})
    with pytest.raises(ConfigError, match=rf"models/{model}/path: {LLAMA} is no file.*write `hub: {LLAMA}`"):
        check_model_ids(config)
    (tmp_path / LLAMA).mkdir(parents=True)  # a folder of that name here is a path, as written
    check_model_ids(config)


def test_llama_server_cannot_take_a_hub_id(default_config):
    model = default_config["engines"][next(iter(default_config["engines"]))]["model"]
    config = with_models(default_config, **{model: {"hub": "HuggingFaceTB/SmolLM2-135M-Instruct"}})
    with pytest.raises(ConfigError, match=rf"models/{model}/hub: engines/.* \(kind llamacpp\).*huggingface-cli"):
        check_model_ids(config)
