"""cluster.same_node: which configuration each one is pinned to, and the --nodelist of a measured baseline."""

from __future__ import annotations

from specsweep.measure import cluster
from specsweep.record.atomic import write_json


def test_each_configuration_is_pinned_to_its_baseline_and_a_bracket_end_to_the_baseline_it_closes():
    configurations = {"base": None, "a": None, "b": None, "base-end": None}
    baselines = {"base": None, "a": "base", "b": "base", "base-end": None}
    assert cluster.same_node_as(configurations, baselines, {"base-end": "base"}) == {
        "a": "base",
        "b": "base",
        "base-end": "base",
    }
    assert cluster.same_node_as({"base": None}, {"base": None}, {"base-end": "base"}) == {}


def test_the_nodelist_is_the_node_the_baseline_was_measured_on(tmp_path):
    launch = tmp_path / "launch.json"
    assert cluster.nodelist_flag(launch) == ""  # not measured yet: the job waits for it (its input)
    write_json(launch, {"placement": {"host": "gpu07.cluster", "slurm_node": "gpu07"}})
    assert cluster.nodelist_flag(launch) == "--nodelist=gpu07"
    write_json(launch, {"placement": {"host": "laptop", "slurm_node": None}})
    assert cluster.nodelist_flag(launch) == "--nodelist=laptop"
    assert cluster.nodelist_flag(None) == ""
