"""The engine's clean environment: defaults, pass-through, the config's variables, null, origins, warnings."""

from __future__ import annotations

import pytest

from specsweep.plan.config import Configuration
from specsweep.plan.environment import (
    CONFIG,
    DEFAULT,
    PASS_THROUGH,
    Policy,
    engine_environment,
    inherited_warnings,
    policy_of,
    swept_variables,
)

CALLER = {
    "PATH": "/usr/bin",
    "HOME": "/root",
    "LC_ALL": "C.UTF-8",
    "SLURM_JOB_ID": "42",
    "CUDA_VISIBLE_DEVICES": "0,1",
    "NCCL_PROTO": "Simple",
    "HF_TOKEN": "hf_secret",
    "EDITOR": "vi",
    "LLAMA_ARG_THREADS": "1",
}


def configuration(name: str, env: dict[str, str], unset: list[str] | None = None) -> Configuration:
    return Configuration(
        name=name, engine="e", kind="llamacpp", baseline=False, args={}, env=env, unset_env=unset or []
    )


def test_only_defaults_pass_through_and_config_reach_the_engine():
    built = engine_environment(CALLER, {"EAGLE3_PROFILE": "1"}, (), pass_through=["HF_*"])
    assert built.values == {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "EAGLE3_PROFILE": "1",
        "HF_TOKEN": "hf_secret",
        "HOME": "/root",
        "LC_ALL": "C.UTF-8",
        "PATH": "/usr/bin",
        "SLURM_JOB_ID": "42",
    }
    assert built.origins == {
        "CUDA_VISIBLE_DEVICES": DEFAULT,
        "EAGLE3_PROFILE": CONFIG,
        "HF_TOKEN": PASS_THROUGH,
        "HOME": DEFAULT,
        "LC_ALL": DEFAULT,
        "PATH": DEFAULT,
        "SLURM_JOB_ID": DEFAULT,
    }


def test_config_wins_and_null_removes_whatever_the_origin():
    built = engine_environment(
        CALLER, {"NCCL_PROTO": "LL"}, ("CUDA_VISIBLE_DEVICES", "HF_TOKEN"), pass_through=["NCCL_*", "HF_TOKEN"]
    )
    assert built.values["NCCL_PROTO"] == "LL" and built.origins["NCCL_PROTO"] == CONFIG
    assert "CUDA_VISIBLE_DEVICES" not in built.values and "HF_TOKEN" not in built.origins


def test_inherited_swept_variables_are_warned_about_once_each_with_secrets_hidden():
    swept = swept_variables(
        [configuration("tuned", {"NCCL_PROTO": "LL", "HF_TOKEN": "x"}), configuration("plain", {}, ["NCCL_PROTO"])]
    )
    assert swept == {"HF_TOKEN": ["tuned"], "NCCL_PROTO": ["tuned", "plain"]}
    warnings = inherited_warnings(CALLER, swept)
    assert len(warnings) == 2 and "hf_secret" not in " ".join(warnings)
    assert warnings[1].startswith(
        "NCCL_PROTO=Simple is set in the calling environment and this sweep sets or unsets NCCL_PROTO (tuned, plain)"
    )


def test_a_launch_says_what_became_of_each_inherited_swept_variable():
    plain, tuned = configuration("plain", {}), configuration("tuned", {"LLAMA_ARG_THREADS": "2"})
    policy = Policy(swept=frozenset(swept_variables([plain, tuned])))
    built, warnings = policy.build(plain, CALLER)
    assert "LLAMA_ARG_THREADS" not in built.values
    assert warnings == [
        "inherited LLAMA_ARG_THREADS=1, which this sweep sets or unsets in some configurations: "
        "this launch runs without it"
    ]
    built, warnings = policy.build(tuned, CALLER)
    assert built.values["LLAMA_ARG_THREADS"] == "2" and "own value is used" in warnings[0]
    passed = Policy(pass_through=("LLAMA_ARG_*",), swept=policy.swept)
    assert passed.build(plain, CALLER)[0].origins["LLAMA_ARG_THREADS"] == PASS_THROUGH


def test_a_job_reads_the_swept_variables_from_the_config_without_expanding_it():
    config = {
        "engines": {"e": {"env": {"A": 1}, "gpus": [0]}},
        "configurations": {"x": {"env": {"B": None}, "grid": {"env": {"C": [1, 2]}}}, "y": {}},
        "factors": {"f": {"l1": {"env": {"D": None}}, "l2": None, "l3": {"--flag": 1}}},
        "environment": {"pass_through": ["HF_*"]},
    }
    policy = policy_of(config)
    assert policy.swept == {"A", "B", "C", "D", "CUDA_VISIBLE_DEVICES"} and policy.pass_through == ("HF_*",)


MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def _configuration(env: dict, unset: list | None = None, name: str = "c") -> Configuration:
    return configuration(name, env, unset)


def test_multicast_off_reaches_every_engine_by_default():
    from specsweep.plan.environment import DEFAULT, engine_environment

    built = engine_environment({"PATH": "/bin", **MULTICAST}, {"NCCL_PROTO": "LL"}, [])
    assert {k: built.values[k] for k in MULTICAST} == MULTICAST and {built.origins[k] for k in MULTICAST} == {DEFAULT}


def test_a_configuration_that_drops_multicast_off_is_refused():
    from specsweep.plan.config import ConfigError
    from specsweep.plan.environment import check_multicast_off

    check_multicast_off([_configuration({"NCCL_PROTO": "LL"})], MULTICAST)
    with pytest.raises(ConfigError, match=r"configuration nccl-untuned unsets it \(null\), but NCCL_NVLS_ENABLE=0"):
        check_multicast_off([_configuration({}, ["NCCL_NVLS_ENABLE"], "nccl-untuned")], MULTICAST)
    with pytest.raises(ConfigError, match="sets NVSHMEM_DISABLE_NVLS=0, but NVSHMEM_DISABLE_NVLS=1 is set"):
        check_multicast_off([_configuration({"NVSHMEM_DISABLE_NVLS": "0"})], MULTICAST)
    # where the caller has none of them (a machine without that rule), nothing is asked
    check_multicast_off([_configuration({}, ["NCCL_NVLS_ENABLE"])], {"PATH": "/bin"})
