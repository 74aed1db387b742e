"""End to end on the real llama-server: a tiny sweep through the whole pipeline.

The engine is built by the pipeline on first use (about 11 min on 2 cores) into the user
cache, which every later test and clone reuses.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml
from workflow_runs import snakemake

from specsweep.engines.server import group_members

REPO = Path(__file__).resolve().parents[2]
# quiet: its assertions rest on measured speed (a conclusion), so it runs with the machine to itself
pytestmark = [pytest.mark.engine, pytest.mark.quiet]
PLANTED = "tok-e2e-planted-4711"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("sweep")
    config = yaml.safe_load((REPO / "tests" / "data" / "config.yaml").read_text())
    # run 1's prompt repeats itself: its greedy n-gram drafts are accepted whatever the machine's numerics
    config["benchmark"]["prompts"] = str(REPO / "tests" / "data" / "prompts.txt")
    config["engines"]["llama"]["args"]["-t"] = 2  # both cores, as the default sweep: this test runs alone
    config["configurations"]["ngram"]["env"] = {"SPECSWEEP_E2E_TOKEN": PLANTED}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = snakemake(workdir, "all")
    assert done.returncode == 0, done.stderr[-4000:]
    (workdir / "snakemake.stderr").write_text(done.stderr)
    return workdir


def test_the_run_ends_with_its_conclusion(sweep):
    from specsweep.analyse import conclusion

    # its commands carry the sweep's --configfile, as the user would type it in the sweep's folder
    expected = conclusion.lines(conclusion.read(sweep / "results" / "summary.csv"), config_files=["config.yaml"])
    printed = (sweep / "snakemake.stderr").read_text()
    assert "\n".join(expected) in printed
    assert expected[0] == "specsweep: 2 of 2 configurations measured" and expected[3].startswith("  best: ")
    # after every job's output: only Snakemake's own closing lines follow
    assert printed.rindex(expected[-1]) > printed.rindex("Finished jobid")


def test_summary_has_one_row_per_configuration(sweep):
    summary = pd.read_csv(sweep / "results" / "summary.csv")
    assert list(summary["configuration"]) == ["baseline", "ngram"]
    assert (summary["runs"] == 2).all()
    assert (summary["tokens_per_run"] == 64).all()
    assert (summary["decode_tok_s_mean"] > 1).all()
    ngram = summary.set_index("configuration").loc["ngram"]
    assert ngram["drafted"] > 0 and 0 < ngram["acceptance_rate"] <= 1
    # the summary's counts are the runs' own, and the server log's run rows say the same
    runs = pd.read_csv(sweep / "results" / "runs.csv")
    runs = runs[runs["configuration"] == "ngram"]
    profile = pd.read_csv(sweep / "results" / "ngram" / "profile.csv")
    logged = profile[profile["phase"] == "run"]
    assert ngram["drafted"] == runs["drafted"].sum() == logged["draft_generated"].fillna(0).sum()
    assert ngram["accepted"] == runs["accepted"].sum() == logged["draft_accepted"].fillna(0).sum()
    assert ngram["acceptance_rate"] == pytest.approx(ngram["accepted"] / ngram["drafted"])
    assert summary.set_index("configuration").loc["baseline", "speedup"] == pytest.approx(1.0)
    assert bool(ngram["text_matches_baseline"])  # greedy: n-gram speculation keeps the text


def test_outputs_per_configuration(sweep):
    for name in ("baseline", "ngram"):
        folder = sweep / "results" / name
        assert (folder / "launch.json").stat().st_size > 0
        assert "print_timing" in (folder / "server.log").read_text()
        profile = pd.read_csv(folder / "profile.csv")
        assert list(profile["phase"]) == ["warmup", "run", "run"]
        assert (profile.loc[profile["phase"] == "run", "eval_tokens"] == 64).all()
    for figure in ("throughput.png", "throughput.svg", "acceptance.png", "acceptance.svg"):
        assert (sweep / "results" / "figures" / figure).stat().st_size > 1000


def test_no_server_is_left_running(sweep):
    # The sweep's own servers (pids and process groups from launch.json), not every llama-server on
    # the machine: another sweep may be measuring at the same time.
    for name in ("baseline", "ngram"):
        pid = json.loads((sweep / "results" / name / "launch.json").read_text())["pid"]
        assert group_members(pid) == [], f"{name}: process group {pid} still has members"
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_secret_in_config_env_is_nowhere_on_disk(sweep):
    # Snakemake keeps rule params in .snakemake/metadata: they must hold a fingerprint, not the value.
    leaks = [
        p
        for folder in ("results", "logs", ".snakemake")
        for p in (sweep / folder).rglob("*")
        if p.is_file() and PLANTED.encode() in p.read_bytes()
    ]
    assert leaks == []


def test_second_run_does_nothing(sweep):
    again = snakemake(sweep, "-n", "all")
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr


def test_deleting_summary_reruns_no_measurement(sweep):
    (sweep / "results" / "summary.csv").unlink()
    rerun = snakemake(sweep, "results/summary.csv")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    log = rerun.stdout + rerun.stderr
    assert "rule summary" in log
    assert "rule bench" not in log


def planned_jobs(text: str) -> dict[str, int]:
    """The job-stats table of a Snakemake plan: rule -> count."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", text, flags=re.M)}


def test_changing_one_configuration_reruns_only_it(sweep):
    config = yaml.safe_load((sweep / "config.yaml").read_text())
    config["configurations"]["ngram"]["args"]["--spec-ngram-simple-size-m"] = 5
    (sweep / "edited.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    plan = snakemake(sweep, "-n", "all", configfile=sweep / "edited.yaml", cores=None)
    assert plan.returncode == 0, plan.stderr[-3000:]
    jobs = planned_jobs(plan.stdout)
    assert jobs["bench"] == 1 and jobs["summary"] == 1 and jobs["provenance"] == 1
    assert "output: results/ngram/launch.json" in plan.stdout
    assert "output: results/baseline/launch.json" not in plan.stdout


def test_a_new_defaulted_config_key_reruns_no_measurement(sweep, tmp_path):
    """A later specsweep whose schema gains keys with defaults must not rerun finished measurements:
    params identify bench and engine jobs by what the user set (common.smk USER_CONFIG). Provenance,
    which records the effective config, is rewritten."""
    code = tmp_path / "code"  # with its own library, which reads the schema beside it
    for part in ("src", "workflow", "scripts", "envs", "config"):
        shutil.copytree(REPO / part, code / part)
    shutil.copy(REPO / "Snakefile", code / "Snakefile")
    schema_path = code / "workflow" / "schemas" / "config.schema.yaml"
    schema = yaml.safe_load(schema_path.read_text())
    schema["properties"]["benchmark"]["properties"]["new_knob"] = {"type": "integer", "default": 3}
    engine = schema["properties"]["engines"]["additionalProperties"]
    engine["properties"]["new_engine_knob"] = {"type": "string", "default": "x"}
    schema_path.write_text(yaml.safe_dump(schema, sort_keys=False))
    python_path = {**os.environ, "PYTHONPATH": str(code / "src")}
    plan = snakemake(sweep, "-n", "all", snakefile=code / "Snakefile", cores=None, env=python_path)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert planned_jobs(plan.stdout) == {"provenance": 1, "all": 1, "total": 2}, plan.stdout[-3000:]
    # the same plan sees a value the user sets (the key exists in this schema only)
    config = yaml.safe_load((sweep / "config.yaml").read_text())
    config["benchmark"]["new_knob"] = 4
    (tmp_path / "set.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    changed = snakemake(
        sweep, "-n", "all", configfile=tmp_path / "set.yaml", snakefile=code / "Snakefile", cores=None, env=python_path
    )
    assert changed.returncode == 0, changed.stderr[-3000:]
    assert planned_jobs(changed.stdout)["bench"] == 2


def test_adaptive_repetitions_add_runs_until_max_runs(tmp_path):
    config = yaml.safe_load((REPO / "tests" / "data" / "config.yaml").read_text())
    config["benchmark"].update(
        prompts=str(REPO / "config" / "prompts.txt"),
        runs=3,
        max_tokens=16,
        adaptive={"ci_half_width_pct": 0.0001, "max_runs": 5},
    )
    del config["configurations"]["ngram"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = snakemake(tmp_path, "results/summary.csv")
    assert done.returncode == 0, done.stderr[-3000:]
    extras = sorted(p.name for p in (tmp_path / "results" / "baseline" / "runs" / "extra").iterdir())
    assert extras == ["run_3.json", "run_4.json"]
    assert pd.read_csv(tmp_path / "results" / "summary.csv")["runs"].tolist() == [5]
    launch = yaml.safe_load((tmp_path / "results" / "baseline" / "launch.json").read_text())
    assert launch["repetitions"]["runs"] == 5 and "max_runs=5" in launch["repetitions"]["stopped_because"]


def test_without_a_gpu_energy_is_not_measured_in_words_and_contention_is_recorded(sweep):
    summary = pd.read_csv(sweep / "results" / "summary.csv")
    assert summary["energy_source"].str.startswith("not measured: no GPU visible through NVML").all()
    assert summary["tokens_per_joule_mean"].isna().all()
    assert "  energy: not measured: no GPU visible" in (sweep / "snakemake.stderr").read_text()
    runs = pd.read_csv(sweep / "results" / "runs.csv")
    assert runs["other_cpu_pct"].notna().all() and runs["energy_j"].isna().all()
    sampled = json.loads((sweep / "results" / "baseline" / "runs" / "run_0.json").read_text())["telemetry"]
    assert sampled["gpus"] == {} and len(sampled["contention"]["load_average_1m"]) == 2
    assert (sweep / "results" / "figures" / "efficiency.png").stat().st_size > 1000
