"""What measuring and build jobs ask a cluster for, from the sweep's config."""

from __future__ import annotations

import math

from specsweep.measure import cluster
from specsweep.plan import config as sweep_config

CLUSTER = {"cpus_per_task": 8, "mem_mb": 32000, "exclusive": True}


def benchmark(**settings):
    return sweep_config.validate_schema(
        {
            "engines": {"e": {"kind": "external", "external": {"base_url": "http://h:1"}}},
            "configurations": {"b": {"baseline": True}},
            "benchmark": settings,
        }
    )["benchmark"]


def test_runtime_is_the_worst_case_the_session_allows_plus_a_margin():
    # defaults: 180 s to load, (1 warmup + 5 runs) x 120 s, 3 x 2 s stop, 30 s GPU release = 936 s
    assert cluster.session_runtime_min(benchmark()) == 16 + cluster.RUNTIME_MARGIN_MIN
    adaptive = benchmark(runs=3, adaptive={"ci_half_width_pct": 2, "max_runs": 20})
    assert cluster.session_runtime_min(adaptive) == cluster.session_runtime_min(benchmark(runs=20))
    assert cluster.session_runtime_min(benchmark(ready_timeout_s=1800)) > cluster.session_runtime_min(benchmark())


def test_a_measuring_job_asks_for_its_engines_gpus_and_the_whole_node():
    gpu_engine = {"kind": "sglang", "gpus": [0, 1, 2, 3]}
    resources = cluster.measuring_resources(gpu_engine, benchmark(), CLUSTER)
    assert resources == {
        "gpu": 4,
        "cpus_per_task": 8,
        "mem_mb": 32000,
        "runtime": cluster.session_runtime_min(benchmark()),
        "slurm_extra": "--no-requeue --exclusive",
    }
    cpu_engine = {"kind": "llamacpp", "args": {"-t": 2}}
    shared = cluster.measuring_resources(cpu_engine, benchmark(), {**CLUSTER, "exclusive": False, "runtime_min": 7})
    assert shared["gpu"] == 0 and shared["cpus_per_task"] == 2  # llama.cpp's own thread count
    assert shared["runtime"] == 7 and shared["slurm_extra"] == "--no-requeue"


def test_a_cuda_build_that_detects_the_architecture_gets_a_gpu():
    native = {"kind": "llamacpp", "llamacpp": {"variant": "cuda", "source": {}}}
    pinned = {"kind": "llamacpp", "llamacpp": {"variant": "cuda", "cuda_architectures": "90", "source": {}}}
    assert cluster.build_resources(native, CLUSTER)["gpu"] == 1
    assert cluster.build_resources(pinned, CLUSTER)["gpu"] == 0
    assert cluster.build_resources({"kind": "llamacpp", "llamacpp": {"variant": "cpu"}}, CLUSTER)["gpu"] == 0


def test_cluster_defaults_are_filled_by_the_schema():
    config = sweep_config.validate_schema(
        {
            "engines": {"e": {"kind": "external", "external": {"base_url": "http://h:1"}}},
            "configurations": {"b": {"baseline": True}},
        }
    )
    assert config["cluster"] == {"cpus_per_task": 8, "mem_mb": 32000, "exclusive": True, "same_node": False}


def test_job_log_lines_finds_what_failed_jobs_said_since_the_sweep_started(tmp_path):
    import os

    old, new = tmp_path / "rule_bench" / "a" / "1.log", tmp_path / "rule_engine" / "e" / "2.log"
    for log, text in (
        (old, "x\nspecsweep cannot be imported by py (old)\n"),
        (new, "head\nspecsweep cannot be imported by py (new)\nspecsweep cannot be imported by py (new)\n"),
    ):
        log.parent.mkdir(parents=True)
        log.write_text(text)
    os.utime(old, (1000, 1000))
    assert cluster.job_log_lines(tmp_path, 2000, "cannot be imported") == ["specsweep cannot be imported by py (new)"]
    assert cluster.job_log_lines(tmp_path / "absent", 0, "x") == []


def test_only_engine_builds_and_sessions_are_submitted_to_a_cluster():
    """Every other rule is light and in the Snakefile's localrules (a new rule must say where it runs)."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    sources = [repo / "Snakefile", *sorted((repo / "workflow" / "rules").glob("*.smk"))]
    rules = {m for path in sources for m in re.findall(r"^(?:rule|checkpoint) (\w+):", path.read_text(), flags=re.M)}
    block = re.search(r"^localrules:\n((?:    \w+,\n)+)", (repo / "Snakefile").read_text(), flags=re.M)
    assert block, "the Snakefile lists its localrules one per line"
    local = set(re.findall(r"(\w+),", block[1]))
    assert rules - local == {"engine", "bench"}
    assert local <= rules


def test_the_time_limit_counts_the_load_windows():
    """A 3-level vLLM load sweep got runtime=25: the estimate ignored the load windows."""
    plain = cluster.session_runtime_min(benchmark())
    loaded = benchmark(load={"concurrency": [1, 4], "request_rate": [0.5], "requests_per_window": 16, "windows": 3})
    # 4 windows (warmup included) x (16 waves x 120 s + 4 waves x 120 s + 16 / 0.5 s + 120 s), beside the 936 s
    assert plain == math.ceil(936 / 60) + cluster.RUNTIME_MARGIN_MIN
    assert (
        cluster.session_runtime_min(loaded)
        == math.ceil((936 + 4 * (1920 + 480 + 152)) / 60) + cluster.RUNTIME_MARGIN_MIN
    )


def test_the_vllm_example_asks_slurm_for_its_gpu(example_campaign):
    config, _ = example_campaign("vllm-eagle3.yaml")
    assert cluster.measuring_resources(config["engines"]["vllm"], config["benchmark"], config["cluster"])["gpu"] == 1
