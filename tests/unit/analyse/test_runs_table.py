"""runs.csv: one row per run, with its prompt and speculation counts; every column documented."""

from __future__ import annotations

from doc_tables import documented_columns
from run_records import run_record

from specsweep.analyse.runs_table import RUNS_COLUMNS, runs_table

CLIENT = {
    "ttft_s": 0.1,
    "decode_s": 5.0,
    "e2e_s": 5.1,
    "decode_tokens_per_s": 99.8,
    "itl_median_s": 0.01,
    "itl_p90_s": 0.012,
    "content_events": 500,
}
SPEC = {"drafted": 400, "accepted": 300, "verify_steps": 100, "emitted": 500, "source": "response"}


def _run(index, prompt, spec=None):
    data = {"prompt_index": prompt, "client": CLIENT, "engine": {"timings": {"predicted_per_second": 100.0}}}
    return run_record({**data, "speculation": spec}, index)


def test_runs_carry_prompt_index_and_speculation_counts():
    table = runs_table({"baseline": [_run(1, 1), _run(0, 0)], "ngram": [_run(0, 0, SPEC), _run(1, 1, SPEC)]})
    assert list(table.columns) == list(RUNS_COLUMNS)
    assert list(table["run"]) == [0, 1, 0, 1] and list(table["prompt_index"]) == [0, 1, 0, 1]
    ngram = table[table["configuration"] == "ngram"].iloc[0]
    assert (ngram["drafted"], ngram["accepted"], ngram["verify_steps"], ngram["speculation_source"]) == (
        400,
        300,
        100,
        "response",
    )
    assert table[table["configuration"] == "baseline"][["drafted", "accepted", "verify_steps"]].isna().all().all()


def test_docs_give_every_runs_column_with_the_code_meaning_in_order():
    assert list(documented_columns("runs.md", "# runs.csv columns").items()) == list(RUNS_COLUMNS.items())
