"""Datasets in the field's formats: ShareGPT (JSON and JSONL), seeded synthetic lengths, the shipped
speculative-decoding set, Hugging Face ids refused offline with the fix, and each one's provenance."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from specsweep.archive.archive_prompts import member_name, provenance
from specsweep.plan.preflight import check_files
from specsweep.plan.workload import Prompt, WorkloadError, categories, hugging_face_refusal, read_workload
from specsweep.record.errors import ConfigError
from specsweep.record.results import UNCATEGORISED

REPO = Path(__file__).resolve().parents[3]
# ShareGPT_V3_unfiltered_cleaned_split.json's shape (the file vLLM's and SGLang's docs download): a list of
# {"id", "conversations": [{"from": "human"|"gpt", "value"}]}; the texts are written for this test
SHAREGPT = REPO / "tests" / "fixtures" / "sharegpt_sample.json"


def test_sharegpt_json_sends_the_first_human_turn_bounded_by_the_reply():
    prompts = read_workload(SHAREGPT)
    # one-turn and gpt-first conversations are left out, as vLLM's ShareGPTDataset leaves them
    assert [p.text for p in prompts] == ["How do I keep basil alive on a windowsill?", "What is 17 times 23?"]
    # the reply's length at four characters a token (no tokenizer is loaded): 136 characters, 4 characters
    assert [p.max_tokens for p in prompts] == [34, 1]
    assert {p.category for p in prompts} == {UNCATEGORISED}


def test_sharegpt_jsonl_is_read_not_refused_for_its_keys(tmp_path):
    path = tmp_path / "sharegpt.jsonl"
    entries = json.loads(SHAREGPT.read_text())
    entries[0]["max_tokens"] = 64  # an entry's own bound wins over the estimate
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    assert [(p.text[:7], p.max_tokens) for p in read_workload(path)] == [("How do ", 64), ("What is", 1)]


def synthetic(tmp_path: Path, **spec) -> Path:
    path = tmp_path / "synthetic.json"
    path.write_text(json.dumps({"synthetic": spec}))
    return path


def test_synthetic_lengths_follow_their_seeded_distributions(tmp_path):
    spec = {
        "seed": 7,
        "prompts": 200,
        "input_tokens": {"distribution": "uniform", "min": 10, "max": 20},
        "output_tokens": {"distribution": "normal", "mean": 64, "std": 8},
    }
    prompts = read_workload(synthetic(tmp_path, **spec))
    assert len(prompts) == 200 and categories(prompts) == ["synthetic"]
    words = [len(p.text.split()) for p in prompts]
    assert min(words) == 10 and max(words) == 20
    outputs = [p.max_tokens for p in prompts]
    assert 60 < sum(outputs) / len(outputs) < 68 and min(outputs) >= 1
    assert read_workload(synthetic(tmp_path, **spec)) == prompts  # the same document, the same prompts
    assert read_workload(synthetic(tmp_path, **{**spec, "seed": 8})) != prompts
    fixed = {**spec, "input_tokens": {"distribution": "fixed", "value": 5}}
    assert {len(p.text.split()) for p in read_workload(synthetic(tmp_path, **fixed))} == {5}
    listed = {**spec, "output_tokens": {"distribution": "values", "values": [16, 256]}}
    assert {p.max_tokens for p in read_workload(synthetic(tmp_path, **listed))} == {16, 256}


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"prompts": 2, "input_tokens": {"distribution": "zipf"}}, ["prompts, input_tokens, output_tokens"]),
        (
            {"prompts": 2, "input_tokens": {"distribution": "zipf"}, "output_tokens": {}},
            ["synthetic.input_tokens", "fixed, uniform, normal, values"],
        ),
        (
            {"prompts": 2, "input_tokens": {"distribution": "uniform", "min": 5}, "output_tokens": {}},
            ["synthetic.input_tokens", "min, max"],
        ),
        (
            {
                "prompts": 0,
                "input_tokens": {"distribution": "fixed", "value": 1},
                "output_tokens": {"distribution": "fixed", "value": 1},
            },
            ["synthetic.prompts"],
        ),
    ],
)
def test_a_bad_synthetic_document_names_the_key_and_the_fix(tmp_path, spec, words):
    with pytest.raises(WorkloadError) as error:
        read_workload(synthetic(tmp_path, **spec))
    assert all(word in str(error.value) for word in words)


def test_another_json_document_is_refused_with_what_is_read(tmp_path):
    path = tmp_path / "prompts.json"
    path.write_text('{"prompt": "a"}\n{"prompt": "b"}\n')  # JSONL saved as .json
    with pytest.raises(WorkloadError, match=r"rename it to prompts\.jsonl"):
        read_workload(path)
    path.write_text('[{"prompt": "a"}]')
    with pytest.raises(WorkloadError, match="ShareGPT list"):
        read_workload(path)


def test_shipped_speculative_set_has_speed_bench_categories_interleaved():
    prompts = read_workload(REPO / "config" / "workloads" / "speculative.jsonl")
    found = categories(prompts)
    assert set(found) == {
        "coding", "humanities", "math", "multilingual", "qa", "rag",
        "reasoning", "roleplay", "stem", "summarisation", "writing",
    }  # fmt: skip
    assert [p.category for p in prompts[: len(found)]] == found  # any 11 consecutive requests cover all
    assert all(p.max_tokens for p in prompts)  # per-prompt max_tokens
    header = (REPO / "config" / "workloads" / "speculative.jsonl").read_text().split("{")[0]
    assert "SPEED-Bench" in header and "Spec-Bench" in header  # its inspiration, cited


def test_a_hugging_face_id_without_the_datasets_library_is_refused_with_the_export_command(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "datasets", None)  # not installed (specsweep does not pin it)
    why = hugging_face_refusal("hf:anon8231489123/ShareGPT_Vicuna_unfiltered")
    assert "load_dataset('anon8231489123/ShareGPT_Vicuna_unfiltered', split='train')" in why
    assert "config/workloads/ShareGPT_Vicuna_unfiltered.jsonl" in why
    assert hugging_face_refusal("config/prompts.txt") is None
    with pytest.raises(ConfigError, match=r"hf:org/set names a Hugging Face dataset, which cannot be read here \(the "
                       r"datasets library is not installed\)"):  # fmt: skip
        check_files({"benchmark": {"prompts": "hf:org/set"}, "engines": {}})


class FakeRows:
    """What datasets.load_dataset returns, as far as specsweep uses it."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows, self.column_names = rows, list(rows[0])

    def to_json(self, path: str) -> None:
        Path(path).write_text("".join(json.dumps(row) + "\n" for row in self.rows))


def test_a_hugging_face_id_is_read_through_datasets_where_installed_and_exported_once(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    asked = []

    def load_dataset(name, split):
        asked.append((name, split))
        if name == "org/offline":
            raise ConnectionError("Couldn't reach 'org/offline' on the Hub (LocalEntryNotFoundError)")
        return FakeRows([{"prompt": "Say hello", "category": "chat"}, {"prompt": "Count to 3", "category": "math"}])

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    config = {"benchmark": {"prompts": "hf:org/set:test"}, "engines": {}, "configurations": {}}
    check_files(config)
    exported = Path(config["benchmark"]["prompts"])
    assert exported == Path("results/workloads/org--set-test.jsonl") and asked == [("org/set", "test")]
    assert [(p.text, p.category) for p in read_workload(exported)] == [("Say hello", "chat"), ("Count to 3", "math")]
    again = {"benchmark": {"prompts": "hf:org/set:test"}, "engines": {}, "configurations": {}}
    check_files(again)  # the export is reused: the same prompts, no network
    assert asked == [("org/set", "test")] and again["benchmark"]["prompts"] == str(exported)
    with pytest.raises(ConfigError, match=r"cannot be read here \(ConnectionError: Couldn't reach"):
        check_files({"benchmark": {"prompts": "hf:org/offline"}, "engines": {}})


def test_each_format_has_its_provenance_for_the_archive(tmp_path):
    spec = {
        "seed": 3,
        "prompts": 4,
        "input_tokens": {"distribution": "fixed", "value": 8},
        "output_tokens": {"distribution": "uniform", "min": 4, "max": 9},
    }
    path = synthetic(tmp_path, **spec)
    found = provenance(path)
    assert found["format"] == "synthetic" and found["synthetic"] == spec and found["prompts"] == 4
    assert member_name(path) == "config/prompts.json"  # read as a document again when rebuilt
    assert provenance(SHAREGPT)["format"] == "sharegpt" and provenance(SHAREGPT)["max_tokens_per_prompt"] == 2
    jsonl = REPO / "config" / "workloads" / "speculative.jsonl"
    assert provenance(jsonl)["format"] == "jsonl" and len(provenance(jsonl)["categories"]) == 11


def test_the_archive_placeholder_of_a_document_reads_as_no_prompts(tmp_path):
    path = tmp_path / "prompts.json"
    path.write_text("# benchmark/prompts (x.json) was not archived\n# sha256 0123\n")
    assert read_workload(path, require_prompts=False) == []
    assert Prompt("a").tokens_wanted(5) == 5
