"""The record files state their format (record/results.py RECORD_FORMAT, with its dated history): an earlier
record is read, a newer one refused naming the file and the fix, and never set aside as damaged."""

from __future__ import annotations

import json

import pytest
from run_records import run_record

from specsweep.record import results
from specsweep.record.results import RECORD_FORMAT, RECORD_FORMATS, NewerRecord


def test_every_record_states_its_format_and_the_history_ends_at_it():
    run = run_record({"client": {"decode_tokens_per_s": 10.0}})
    assert run.to_json()["format"] == RECORD_FORMAT == max(RECORD_FORMATS)
    assert sorted(RECORD_FORMATS) == list(range(1, RECORD_FORMAT + 1))
    assert all(text[:10].count("-") == 2 for text in RECORD_FORMATS.values())  # each dated


def test_a_record_without_a_format_is_an_earlier_one_and_is_read(tmp_path):
    path = tmp_path / "run_0.json"
    path.write_text(json.dumps({"run": 0, "prompt_index": 0, "tokens": 5, "text_sha256": "t", "client": {}}))
    assert results.read_run(path).tokens == 5


@pytest.mark.parametrize("reader", ["read_run", "read_launch", "read_window"])
def test_a_newer_record_is_refused_not_misread_nor_set_aside(tmp_path, reader):
    path = tmp_path / "record.json"
    path.write_text(json.dumps({"format": RECORD_FORMAT + 1, "run": 0}))
    with pytest.raises(NewerRecord, match=rf"record.json: a \w+ record of format {RECORD_FORMAT + 1}, written by a "):
        getattr(results, reader)(path)
    assert path.exists()  # a DamagedFile would have been renamed by the job that read it
