"""Leftovers and misnamed inputs (misuse): empty ``runs/`` or ``load/`` folders do not stop a rerun, a JSONL
dataset is read as one whatever the case of its suffix (and a ``.json`` one is refused, not read as text),
and a configuration may not take the name of the report the conclusion tells the user to make."""

from __future__ import annotations

import io
import json

import pytest
import yaml
from conftest import REPO, snakemake, write_config

from specsweep.archive.archive_prompts import member_name
from specsweep.plan.workload import Prompt, WorkloadError, read_workload
from specsweep.record.history import keep_previous_session


@pytest.mark.parametrize("folders", [["runs"], ["load"], ["runs", "load/c1"]])
def test_empty_session_folders_are_nothing_to_keep(tmp_path, folders):
    for folder in folders:
        (tmp_path / "a" / folder).mkdir(parents=True)
    assert keep_previous_session("a", io.StringIO(), tmp_path) is None
    assert not (tmp_path / "a" / "history").exists()


def test_empty_folders_beside_a_session_keep_the_session(tmp_path):
    (tmp_path / "a" / "load").mkdir(parents=True)
    (tmp_path / "a" / "server.log").write_text("log\n")
    kept = keep_previous_session("a", io.StringIO(), tmp_path)
    assert kept is not None and (kept / "server.log").read_text() == "log\n"


DATASET = json.dumps({"prompt": "a", "category": "code"}) + "\n" + json.dumps({"prompt": "b"}) + "\n"


@pytest.mark.parametrize("name", ["set.JSONL", "set.Jsonl"])
def test_a_jsonl_dataset_is_read_as_one_whatever_the_case_of_its_suffix(tmp_path, name):
    path = tmp_path / name
    path.write_text(DATASET)
    assert read_workload(path) == [Prompt("a", "code"), Prompt("b")]
    assert member_name(path) == "config/prompts.jsonl"  # the archive reads it back the same way


@pytest.mark.parametrize("name", ["set.json", "set.JSON"])
def test_a_dataset_named_json_is_refused_with_the_fix(tmp_path, name):
    path = tmp_path / name
    path.write_text(DATASET)
    with pytest.raises(WorkloadError) as error:
        read_workload(path)
    assert str(path) in str(error.value) and "rename it to set.jsonl" in str(error.value)


def test_a_text_file_that_holds_a_dataset_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "set.txt"
    path.write_text("# categorised\n" + DATASET)
    with pytest.raises(WorkloadError) as error:
        read_workload(path)
    assert "line 2 is a JSON object with a 'prompt' key" in str(error.value)
    assert "rename it to set.jsonl" in str(error.value)


def test_a_text_prompt_that_merely_mentions_braces_is_a_prompt(tmp_path):
    path = tmp_path / "prompts.txt"
    path.write_text('Explain {"a": 1} in JSON.\n{"prompt" is a word here}\n')
    assert [p.text for p in read_workload(path)] == ['Explain {"a": 1} in JSON.', '{"prompt" is a word here}']


def test_a_configuration_named_like_the_report_is_refused(tmp_path):
    write_config(
        tmp_path,
        tmp_path / "llama-server",
        tmp_path / "model.gguf",
        {"baseline": {"baseline": True}, "report.html": {}},
    )
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    config["engines"]["llama"].pop("executable")  # checked later than names: the pin is never built here
    config["engines"]["llama"]["llamacpp"] = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["engines"][
        "llama"
    ]["llamacpp"]
    config["models"]["tiny"] = {"path": str(REPO / "config" / "prompts.txt")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    done = snakemake(tmp_path, "-n", "results/commands.sh")
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert "name 'report.html' is taken by the pipeline's own results/report.html" in said, said[-2000:]
