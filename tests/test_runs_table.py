"""runs.csv: one row per run, with its prompt and speculation counts; every column documented."""

from __future__ import annotations

from pathlib import Path

from specsweep.aggregate import runs_table

DOCS = Path(__file__).resolve().parents[1] / "docs" / "runs.md"
CLIENT = {"ttft_s": 0.1, "decode_s": 5.0, "e2e_s": 5.1, "decode_tokens_per_s": 99.8, "itl_median_s": 0.01,
          "itl_p90_s": 0.012, "content_events": 500}


def _run(index, prompt, spec=None):
    return {"run": index, "prompt_index": prompt, "tokens": 500, "client": CLIENT,
            "engine": {"timings": {"predicted_per_second": 100.0}}, "speculation": spec}


def test_runs_carry_prompt_index_and_speculation_counts():
    spec = {"drafted": 400, "accepted": 300, "verify_steps": 100, "emitted": 500, "source": "response",
            "acceptance_rate": 0.75, "accept_length": 4.0}
    table = runs_table({"baseline": [_run(1, 1), _run(0, 0)], "ngram": [_run(0, 0, spec), _run(1, 1, spec)]})
    assert list(table["run"]) == [0, 1, 0, 1] and list(table["prompt_index"]) == [0, 1, 0, 1]
    ngram = table[table["configuration"] == "ngram"].iloc[0]
    assert (ngram["drafted"], ngram["accepted"], ngram["verify_steps"], ngram["speculation_source"]) == \
        (400, 300, 100, "response")
    assert table[table["configuration"] == "baseline"][["drafted", "accepted", "verify_steps"]].isna().all().all()
    assert "acceptance_rate" not in table  # ratios are derived once, in summary.csv


def test_every_runs_column_is_documented():
    table = runs_table({"x": [_run(0, 0, {"drafted": 1, "accepted": 1, "verify_steps": 1, "source": "s"})]})
    documented = DOCS.read_text()
    missing = [c for c in table.columns if f"| `{c}` |" not in documented]
    assert not missing, f"document these runs.csv columns in docs/runs.md: {missing}"
