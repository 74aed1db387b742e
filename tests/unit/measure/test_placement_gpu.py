"""Which GPUs an engine uses (placement.select_gpus): under a Slurm job the ones Slurm assigned, whatever
engines/<e>/gpus lists; outside a scheduler the fixed list, or the first N; and the physical GPUs (UUIDs)
behind them (placement.used_gpus)."""

from __future__ import annotations

import pytest

from specsweep.measure import cluster
from specsweep.measure.placement import select_gpus, used_gpus
from specsweep.plan import config as sweep_config

SLURM_JOB = {"SLURM_JOB_ID": "77", "SLURM_JOB_GPUS": "2,3", "CUDA_VISIBLE_DEVICES": "0,1"}


def test_under_slurm_the_engine_uses_the_gpus_slurm_assigned_not_its_fixed_list():
    fixed = select_gpus("vllm", [0, 1], {"CUDA_VISIBLE_DEVICES": "0,1"}, {**SLURM_JOB, "CUDA_VISIBLE_DEVICES": "4,5"})
    assert fixed.env() == {"CUDA_VISIBLE_DEVICES": "4,5"}
    assert fixed.source == "Slurm job 77 (CUDA_VISIBLE_DEVICES)"
    assert "lists GPUs 0,1, but under Slurm job 77" in fixed.warnings[0] and "gpus: 2" in fixed.warnings[0]
    counted = select_gpus("vllm", 2, {}, SLURM_JOB)
    assert counted.env() == {"CUDA_VISIBLE_DEVICES": "0,1"} and not counted.warnings
    # no CUDA_VISIBLE_DEVICES in the job (a site without GPU binding): the job's physical GPUs
    bare = select_gpus("vllm", 2, {}, {"SLURM_JOB_ID": "77", "SLURM_JOB_GPUS": "2,3"})
    assert bare.env() == {"CUDA_VISIBLE_DEVICES": "2,3"} and bare.source == "Slurm job 77 (SLURM_JOB_GPUS)"


def test_under_slurm_too_few_or_no_assigned_gpus_is_an_error_naming_the_job():
    with pytest.raises(RuntimeError, match=r"asks for 4 GPU.*Slurm job 77 was given 0,1"):
        select_gpus("sg", 4, {}, SLURM_JOB)
    with pytest.raises(RuntimeError, match="Slurm job 77 was given none"):
        select_gpus("sg", 1, {}, {"SLURM_JOB_ID": "77"})


def test_outside_a_scheduler_a_list_is_used_as_given_and_a_count_takes_the_first():
    assert select_gpus("e", [3], {"CUDA_VISIBLE_DEVICES": "3"}, {}).env() == {"CUDA_VISIBLE_DEVICES": "3"}
    assert select_gpus("e", 2, {}, {}).env() == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert select_gpus("e", 1, {}, {"CUDA_VISIBLE_DEVICES": "5,6"}).env() == {"CUDA_VISIBLE_DEVICES": "5"}
    assert select_gpus("e", None, {}, SLURM_JOB).env() == {}  # a CPU engine gets nothing from specsweep


def test_a_configurations_own_cuda_visible_devices_wins_even_under_slurm():
    chosen = select_gpus("e", [0], {"CUDA_VISIBLE_DEVICES": "1"}, SLURM_JOB)
    assert chosen.env() == {"CUDA_VISIBLE_DEVICES": "1"} and chosen.source == "the configuration's env"


def test_a_count_is_what_the_measuring_job_requests_and_sets_no_devices_at_plan_time():
    config = sweep_config.validate_schema(
        {
            "engines": {"e": {"kind": "external", "external": {"base_url": "http://h:1"}, "gpus": 2}},
            "configurations": {"b": {"baseline": True}},
        }
    )
    resources = cluster.measuring_resources(config["engines"]["e"], config["benchmark"], config["cluster"])
    assert resources["gpu"] == 2 and "--no-requeue" in resources["slurm_extra"]
    (configuration,) = sweep_config.expand_entry(config, "b").values()
    assert "CUDA_VISIBLE_DEVICES" not in configuration.env


def test_the_physical_gpus_are_named_by_uuid_in_the_order_used():
    listed = (
        "0, GPU-aaaa-0000, 00000000:18:00.0, NVIDIA H200\n"
        "1, GPU-bbbb-1111, 00000000:2A:00.0, NVIDIA H200\n"
        "2, GPU-cccc-2222, 00000000:3A:00.0, NVIDIA H200\n"
    )
    assert [g["uuid"] for g in used_gpus("2,0", listed)] == ["GPU-cccc-2222", "GPU-aaaa-0000"]
    assert used_gpus("GPU-bbbb", listed)[0]["pci_bus_id"] == "00000000:2A:00.0"
    assert used_gpus("7", listed) == [{"index": "7", "uuid": "not listed by nvidia-smi"}]


def test_commands_sh_takes_a_counted_engines_gpus_from_the_callers_environment(tmp_path, monkeypatch):
    """results/commands.sh run inside a Slurm job uses the job's GPUs: never CUDA_VISIBLE_DEVICES=0, never unset."""
    from specsweep.plan import launchplan
    from specsweep.plan.config import Configuration

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    engine = {"kind": "llamacpp", "model": "m", "executable": "llama-server", "args": {}, "env": {}, "gpus": 2}
    configuration = Configuration(name="c", engine="e", kind="llamacpp", baseline=True, args={}, env={})
    line = launchplan.shell_line(
        launchplan.plan(configuration, engine, {"m": {"path": "m.gguf"}}, ["CUDA_VISIBLE_DEVICES"])
    )
    assert (
        line.startswith('env CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES}" ') and "-u CUDA_VISIBLE_DEVICES" not in line
    )
    fixed = {**engine, "gpus": [3]}
    pinned = Configuration(
        name="c", engine="e", kind="llamacpp", baseline=True, args={}, env={"CUDA_VISIBLE_DEVICES": "3"}
    )
    assert launchplan.shell_line(launchplan.plan(pinned, fixed, {"m": {"path": "m.gguf"}})).startswith(
        "env CUDA_VISIBLE_DEVICES=3 "
    )
