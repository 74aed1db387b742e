from __future__ import annotations

import json
from pathlib import Path

import pytest

from specsweep.plan.workload import Prompt, WorkloadError, categories, read_workload
from specsweep.record.results import UNCATEGORISED

REPO = Path(__file__).resolve().parents[3]


def test_text_file_is_one_prompt_a_line(tmp_path):
    path = tmp_path / "prompts.txt"
    path.write_text("# a comment\n\nfirst prompt\n  second prompt  \n")
    assert read_workload(path) == [Prompt("first prompt"), Prompt("second prompt")]


def test_jsonl_dataset_with_categories_and_max_tokens(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text(
        json.dumps({"prompt": "a", "category": "code", "max_tokens": 7}) + "\n\n" + json.dumps({"prompt": "b"}) + "\n"
    )
    prompts = read_workload(path)
    assert prompts == [Prompt("a", "code", 7), Prompt("b", UNCATEGORISED, None)]
    assert prompts[0].tokens_wanted(500) == 7 and prompts[1].tokens_wanted(500) == 500


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("{not json", ["line 1", "not JSON"]),
        ('["a"]', ["line 1", "JSON object"]),
        ('{"prompt": ""}', ["'prompt' must be a non-empty string"]),
        ('{"prompt": "a", "category": 3}', ["'category'"]),
        ('{"prompt": "a", "max_tokens": 0}', ["'max_tokens' must be a positive integer"]),
        ('{"prompt": "a", "max_tokens": true}', ["'max_tokens'"]),
        ('{"prompt": "a", "temperature": 1}', ["unknown key(s) temperature"]),
    ],
)
def test_bad_dataset_lines_name_the_file_line_and_fix(tmp_path, line, words):
    path = tmp_path / "set.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(WorkloadError) as error:
        read_workload(path)
    assert str(path) in str(error.value)
    for word in words:
        assert word in str(error.value)


def test_empty_dataset_is_an_error(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text("\n")
    with pytest.raises(WorkloadError, match="no prompts"):
        read_workload(path)


def test_shipped_set_has_at_least_six_categories_interleaved():
    prompts = read_workload(REPO / "config" / "workloads" / "categories.jsonl")
    found = categories(prompts)
    assert len(found) >= 6 and "rewrite" in found
    assert all(sum(p.category == c for p in prompts) >= 3 for c in found)
    # any len(found) consecutive requests cover every category (request i uses prompt i mod n)
    assert [p.category for p in prompts[: len(found)]] == found


def test_jsonl_comment_lines_and_an_empty_set_when_allowed(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text('# written for a test\n{"prompt": "a"}\n')
    assert read_workload(path) == [Prompt("a")]
    path.write_text("# benchmark/prompts was not archived\n# sha256 0123\n")  # an archive's placeholder
    assert read_workload(path, require_prompts=False) == []


def test_a_binary_dataset_is_refused(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_bytes(b'{"prompt": "a"}\n\x00\x01')
    with pytest.raises(WorkloadError, match="not a UTF-8 text file"):
        read_workload(path)
