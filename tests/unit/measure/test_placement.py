"""Where a configuration ran, and the warning when a comparison crosses machines."""

from __future__ import annotations

from run_records import run_record

from specsweep.analyse import aggregate
from specsweep.measure import placement
from specsweep.plan.config import Configuration
from specsweep.record.results import Launch

H200 = {"host": {"hostname": "gpu01"}, "gpus": {"models": ["NVIDIA H200", "NVIDIA H200"], "driver_version": "570.1"}}


def test_placement_names_node_gpu_model_driver_and_slurm_job(monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURMD_NODENAME", "gpu01")
    assert placement.placement(H200) == {
        "host": "gpu01",
        "gpu_models": ["NVIDIA H200"],
        "gpu_driver": "570.1",
        "slurm_job_id": "42",
        "slurm_node": "gpu01",
    }
    monkeypatch.delenv("SLURM_JOB_ID")
    monkeypatch.delenv("SLURMD_NODENAME")
    cpu = placement.placement({"host": {"hostname": "laptop"}, "gpus": None})
    assert cpu == {"host": "laptop", "gpu_models": None, "gpu_driver": None, "slurm_job_id": None, "slurm_node": None}


def launch(**fields) -> Launch:
    return Launch(configuration={}, argv=[], port=0, host="127.0.0.1", env_set={}, env={}, launched_at="t", **fields)


def test_a_launch_record_without_placement_is_read_from_its_machine_snapshot():
    assert placement.of_launch(launch(machine=H200))["host"] == "gpu01"
    assert placement.of_launch(launch())["host"] is None
    assert Launch.from_json(launch(placement={"host": "n1"}).to_json()).placement == {"host": "n1"}


def test_cross_machine_comparisons_are_named():
    here = {"host": "gpu01", "gpu_models": ["NVIDIA H200"]}
    assert placement.cross_machine_warning(here, dict(here)) is None
    other_node = placement.cross_machine_warning({**here, "host": "gpu02"}, here)
    assert other_node == (
        "measured on gpu02 (NVIDIA H200) but the baseline on gpu01 (NVIDIA H200): the speedup compares two machines"
    )
    assert "H100" in placement.cross_machine_warning({**here, "gpu_models": ["NVIDIA H100"]}, here)
    assert placement.cross_machine_warning({"host": None}, here) is None


def run(rate: float, index: int):
    return run_record(
        {
            "prompt_index": index,
            "client": {"decode_tokens_per_s": rate, "ttft_s": 0.1, "itl_median_s": 0.01},
            "engine": {},
        },
        index,
    )


def test_summary_has_a_host_column_and_warns_when_the_baseline_ran_elsewhere():
    configurations = {
        n: Configuration(name=n, engine="e", kind="llamacpp", baseline=n == "base", args={}, env={})
        for n in ("base", "same", "moved")
    }
    runs = {n: [run(100.0 + i, i) for i in range(3)] for n in configurations}
    at = {"base": "gpu01", "same": "gpu01", "moved": "gpu02"}
    launches = {n: launch(placement={"host": h, "gpu_models": ["NVIDIA H200"]}) for n, h in at.items()}
    frame = aggregate.summarise(configurations, runs, launches).set_index("configuration")
    assert frame["host"].to_dict() == at
    assert "the speedup compares two machines" in frame.loc["moved", "warnings"]
    assert "two machines" not in frame.loc["same", "warnings"]
    assert any("moved: measured on gpu02" in line for line in aggregate.warning_lines(frame.reset_index()))
