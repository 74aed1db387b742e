"""compare (misuse): a ratio is made from the runs the summary counts (an excluded run, e.g. a paused client,
is not averaged in), and two configurations measured under other benchmark settings (max_tokens, prompts, chat
template) are not compared as if they were the same measurement."""

from __future__ import annotations

import pytest
from run_records import write_session

from specsweep.report import compare

BENCHMARK = {"max_tokens": 500, "prompts": "config/prompts.txt", "chat_template": False, "seed": 42, "runs": 3}


def _sweep(root, rates, benchmark=None, excluded=()):
    configuration = {"name": "cfg", "kind": "llamacpp", "args": {"-t": 2}, "env": {}, "draft_model": None}
    reason = "the client's decode rate disagrees with the engine's"
    extra = {"benchmark": {**BENCHMARK, **(benchmark or {})}, "excluded": dict.fromkeys(excluded, reason)}
    write_session(root / "results" / "cfg", configuration, rates, extra)
    return root


def test_a_run_the_summary_excludes_is_not_averaged_in(tmp_path):
    before = compare.load(_sweep(tmp_path / "a", [60.0, 61.0, 59.0]))
    # run 1 was paused on the client side: 3 tok/s, excluded by the session's rate check (as in summary.csv)
    after = compare.load(_sweep(tmp_path / "b", [80.0, 3.0, 79.0, 81.0], excluded=(1,)))
    [row] = compare.compare(before, after).to_dict("records")
    assert row["status"] == "compared" and row["runs_after"] == 3
    assert row["decode_tok_s_after"] == pytest.approx(80.0) and row["ratio"] == pytest.approx(80.0 / 60.0)


@pytest.mark.parametrize(
    ("setting", "value", "said"),
    [
        ("max_tokens", 2000, "benchmark/max_tokens: 500 -> 2000"),
        ("prompts", "config/prompts.jsonl", "benchmark/prompts: config/prompts.txt -> config/prompts.jsonl"),
        ("chat_template", True, "benchmark/chat_template: False -> True"),
    ],
)
def test_other_benchmark_settings_are_a_difference(tmp_path, setting, value, said):
    before = compare.load(_sweep(tmp_path / "a", [60.0, 61.0, 59.0]))
    after = compare.load(_sweep(tmp_path / "b", [80.0, 79.0, 81.0], {setting: value}))
    [row] = compare.compare(before, after).to_dict("records")
    assert row["status"].startswith("parameters differ") and said in row["differences"]
    [named] = compare.compare(before, after, match="name").to_dict("records")
    assert named["status"] == "compared" and said in named["differences"]


def test_settings_that_do_not_change_a_measurement_are_no_difference(tmp_path):
    before = compare.load(_sweep(tmp_path / "a", [60.0, 61.0, 59.0]))
    after = compare.load(_sweep(tmp_path / "b", [80.0, 79.0, 81.0], {"runs": 5, "ready_timeout_s": 900}))
    [row] = compare.compare(before, after).to_dict("records")
    assert row["status"] == "compared" and row["differences"] == ""
