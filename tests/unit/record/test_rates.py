"""One baseline has four throughput rates: each output names which one a number is, in the same words
(src/specsweep/record/rates.py, their one home)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from specsweep.analyse import aggregate, conclusion, loadsummary, runs_table
from specsweep.record.rates import END_TO_END_OUTPUT, PER_REQUEST_DECODE, RATES, SINGLE_REQUEST_DECODE, STEADY_OUTPUT
from specsweep.report import benchserve, compare

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "summary_verdicts.csv"


def test_the_four_rates_have_four_names():
    names = [r.name for r in RATES]
    assert names == [
        "single-request decode rate",
        "per-request decode rate under load",
        "steady output rate",
        "end-to-end output rate",
    ]


def test_every_table_names_the_rate_of_its_throughput_columns():
    assert aggregate.COLUMNS["decode_tok_s_mean"].startswith(SINGLE_REQUEST_DECODE.label)
    assert runs_table.RUNS_COLUMNS["decode_tok_s"].startswith(SINGLE_REQUEST_DECODE.label)
    assert loadsummary.LOAD_COLUMNS["output_tok_s_mean"].startswith(STEADY_OUTPUT.label)
    assert loadsummary.LOAD_COLUMNS["decode_tok_s_mean"].startswith(PER_REQUEST_DECODE.label)
    assert STEADY_OUTPUT.name in loadsummary.LOAD_COLUMNS["speedup"]
    assert SINGLE_REQUEST_DECODE.label in compare.COLUMNS["decode_tok_s_after"]


def test_bench_serve_json_says_which_rate_output_throughput_is():
    written = benchserve.sweep_results({}, [])
    assert written["definitions"]["output_throughput"].startswith(END_TO_END_OUTPUT.label)


def test_the_conclusion_names_the_rate_of_its_numbers():
    text = conclusion.lines(conclusion.read(GOLDEN))
    quoted = [line for line in text if "tok/s" in line]
    assert quoted and all(f"tok/s {SINGLE_REQUEST_DECODE.name}" in line for line in quoted)


def test_compare_names_the_rate():
    frame = pd.DataFrame(
        [
            {
                "configuration": "a",
                "status": "compared",
                "differences": "",
                "decode_tok_s_before": 10.0,
                "decode_tok_s_after": 11.0,
                "delta_pct": 10.0,
                "ratio_ci95_low": 1.05,
                "ratio_ci95_high": 1.15,
                "sessions_paired": 2,
                "p_value": 0.01,
                "significant": True,
                "warnings": "",
            }
        ]
    )
    text = compare.describe(frame, "x", "y")
    assert any(f"11.0 tok/s {SINGLE_REQUEST_DECODE.name}" in line for line in text)


def test_no_figure_or_console_line_shows_an_unnamed_rate():
    """An axis label or a progress line with 'tok/s' and no rate's name is the confusion this fixes."""
    unnamed = re.compile(r"(set_[xy]label|print)\([^)]*tok/s")
    for path in ["report/figures.py", "report/loadfigures.py", "report/energyfigures.py", "measure/session.py"]:
        source = (ROOT / "src" / "specsweep" / path).read_text()
        assert not unnamed.search(source), path
        assert "decode throughput (tokens/s" not in source, path


def test_the_docs_define_each_rate_in_its_words():
    summary = (ROOT / "docs" / "summary.md").read_text()
    for rate in RATES:
        assert f"| {rate.label} | {rate.definition} |" in summary
    readme = (ROOT / "README.md").read_text()
    assert "tok/s single-request decode rate (95 % CI" in readme
