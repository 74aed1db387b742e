"""Paper outputs from summary.csv: macros and a booktabs table, with or without optional columns."""

from __future__ import annotations

import pandas as pd
import pytest

from specsweep import paper


@pytest.fixture
def summary() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "configuration": ["baseline", "ngram_m8", "draft-model"],
            "baseline": [True, False, False],
            "status": ["ok", "ok", "ok"],
            "engine_version": ["b11434-b11434"] * 3,
            "runs": [5, 5, 5],
            "tokens_per_run": [500, 500, 500],
            "tok_s_mean": [60.0, 90.25, 30.0],
            "tok_s_ci95_low": [58.0, 88.0, 29.0],
            "tok_s_ci95_high": [62.0, 92.5, 31.0],
            "speedup": [1.0, 1.504167, 0.5],
            "speedup_pct": [0.0, 50.4167, -50.0],
            "speedup_ci95_low": [float("nan"), 1.44, 0.47],
            "speedup_ci95_high": [float("nan"), 1.57, 0.53],
            "acceptance_rate": [float("nan"), 0.8123, 1.0],
            "accept_length": [float("nan"), 3.1, 4.0],
        }
    )


def macro(text: str, name: str) -> str:
    line = next(line for line in text.splitlines() if line.startswith(f"\\newcommand{{\\specsweep{name}}}"))
    return line.split("}{", 1)[1][:-1]


def test_macros_give_the_headline_numbers(summary):
    text = paper.macros(summary)
    assert macro(text, "BaselineTokS") == "60.0"
    assert macro(text, "BestName") == r"ngram\_m8"
    assert macro(text, "BestTokS") == "90.2"  # 90.25 rounds half to even
    assert macro(text, "BestSpeedup") == r"1.50\times"
    assert macro(text, "BestSpeedupPct") == r"+50.4\,\%"
    assert macro(text, "BestSpeedupCI") == r"[1.44, 1.57]\times"
    assert macro(text, "BestAcceptanceRate") == r"81.2\,\%"
    assert macro(text, "RunsPerConfiguration") == "5"
    assert macro(text, "Configurations") == "3"
    names = paper.macro_names(text)
    assert len(names) == len(set(names)) and all(n.isalpha() for n in names)


def test_missing_speedup_ci_degrades_to_na(summary):
    older = summary.drop(columns=["speedup_ci95_low", "speedup_ci95_high"])
    text = paper.macros(older)
    assert macro(text, "BestSpeedupCI") == paper.NA
    table = paper.table(older)
    assert "Speedup 95" not in table and r"\toprule" in table


def test_table_is_booktabs_with_one_row_per_configuration(summary):
    table = paper.table(summary)
    lines = table.splitlines()
    body = lines[lines.index(r"\midrule") + 1 : lines.index(r"\bottomrule")]
    assert len(body) == 3 and body[0].endswith("% baseline")
    assert body[1].startswith(r"ngram\_m8 & 90.2 & [88.0, 92.5] & 1.50$\times$ & [1.44, 1.57] & 81.2\,\% & 3.10")
    assert r"\textit{n/a}" in body[0]  # the baseline has no acceptance
    assert r"\begin{tabular}{lrrrrrr}" in table


def test_no_speculative_configuration_still_compiles():
    only = pd.DataFrame({"configuration": ["baseline"], "baseline": [True], "runs": [3], "tok_s_mean": [50.0]})
    text = paper.macros(only)
    assert macro(text, "BaselineTokS") == "50.0" and "BestName" not in text
    assert r"\begin{tabular}{lr}" in paper.table(only)


def test_escape():
    assert paper.escape("a_b&c%d#e") == r"a\_b\&c\%d\#e"


def test_write_is_deterministic(summary, tmp_path):
    summary.to_csv(tmp_path / "summary.csv", index=False)
    for run in ("a", "b"):
        paper.write(tmp_path / "summary.csv", tmp_path / run / "macros.tex", tmp_path / run / "table.tex")
    assert (tmp_path / "a" / "macros.tex").read_bytes() == (tmp_path / "b" / "macros.tex").read_bytes()
    assert (tmp_path / "a" / "table.tex").read_bytes() == (tmp_path / "b" / "table.tex").read_bytes()


def test_a_zero_acceptance_rate_is_zero_percent_not_missing():
    from specsweep.paper import _percent

    assert _percent(0.0) == 0.0 and _percent(0.25) == 25.0
    assert _percent(None) != _percent(None)  # NaN: shown as n/a


def test_runs_per_configuration_is_a_range_when_adaptive_runs_differ(summary):
    adaptive = summary.assign(runs=[5, 12, 7])
    assert macro(paper.macros(adaptive), "RunsPerConfiguration") == "5--12"
    assert r"(5--12 runs each;" in paper.table(adaptive)
    assert r"(5 runs each;" in paper.table(summary.assign(runs=5))
