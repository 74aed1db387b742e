"""Paper outputs from summary.csv: macros and a booktabs table, with or without optional columns."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from specsweep.report import paper


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
            "decode_tok_s_mean": [60.0, 90.25, 30.0],
            "decode_tok_s_ci95_low": [58.0, 88.0, 29.0],
            "decode_tok_s_ci95_high": [62.0, 92.5, 31.0],
            "speedup": [1.0, 1.504167, 0.5],
            "speedup_pct": [0.0, 50.4167, -50.0],
            "speedup_ci95_low": [float("nan"), 1.44, 0.47],
            "speedup_ci95_high": [float("nan"), 1.57, 0.53],
            "speedup_sim95_low": [float("nan"), 1.41, 0.45],
            "speedup_sim95_high": [float("nan"), 1.60, 0.55],
            "significant": [None, True, True],
            "acceptance_rate": [float("nan"), 0.8123, 1.0],
            "accept_length": [float("nan"), 3.1, 4.0],
        }
    )


def macro(text: str, name: str) -> str:
    line = next(line for line in text.splitlines() if line.startswith(f"\\newcommand{{\\specsweep{name}}}"))
    return line.split("}{", 1)[1][:-1]


def math(value: str) -> str:
    return rf"\ensuremath{{{value}}}"


def test_macros_give_the_headline_numbers(summary):
    text = paper.macros(summary)
    assert macro(text, "BaselineTokS") == math("60.0")
    assert macro(text, "BestName") == r"ngram\_m8"
    assert macro(text, "BestTokS") == math("90.2")  # 90.25 rounds half to even
    assert macro(text, "BestSpeedup") == math(r"1.50\times")
    assert macro(text, "BestSpeedupPct") == math(r"+50.4\,\%")
    assert macro(text, "BestSpeedupCI") == math(r"[1.41, 1.60]\times")  # simultaneous: it was selected
    assert macro(text, "BestAcceptanceRate") == math(r"81.2\,\%")
    assert macro(text, "RunsPerConfiguration") == "5"
    assert macro(text, "Configurations") == "3"
    names = paper.macro_names(text)
    assert len(names) == len(set(names)) and all(n.isalpha() for n in names)


def test_the_best_macros_follow_the_conclusion(summary):
    """Issue 26: a configuration the console calls no better than the baseline is not the paper's best."""
    summary.loc[summary["configuration"] == "ngram_m8", "significant"] = False
    text = paper.macros(summary)
    assert "BestName" not in text and "no configuration is significantly faster" in text
    summary.loc[summary["configuration"] == "ngram_m8", ["decode_tok_s_mean", "significant"]] = [20.0, True]
    summary.loc[summary["configuration"] == "ngram_m8", "speedup"] = 0.33  # significantly slower: not a best
    assert "BestName" not in paper.macros(summary)


def test_missing_speedup_ci_degrades_to_na(summary):
    older = summary.drop(columns=["speedup_sim95_low", "speedup_sim95_high", "speedup_ci95_low", "speedup_ci95_high"])
    text = paper.macros(older)
    assert macro(text, "BestSpeedupCI") == math(paper.NA)
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
    only = pd.DataFrame({"configuration": ["baseline"], "baseline": [True], "runs": [3], "decode_tok_s_mean": [50.0]})
    text = paper.macros(only)
    assert macro(text, "BaselineTokS") == math("50.0") and "BestName" not in text
    check_latex_macros(text, "specsweep")
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
    from specsweep.report.paper import _percent

    assert _percent(0.0) == 0.0 and _percent(0.25) == 25.0
    assert _percent(None) != _percent(None)  # NaN: shown as n/a


def test_runs_per_configuration_is_a_range_when_adaptive_runs_differ(summary):
    adaptive = summary.assign(runs=[5, 12, 7])
    assert macro(paper.macros(adaptive), "RunsPerConfiguration") == "5--12"
    assert r"(5--12 runs each;" in paper.table(adaptive)
    assert r"(5 runs each;" in paper.table(summary.assign(runs=5))


# What a macro file may contain: each line a comment, a \newcommand or a \csname definition, each body
# brace-balanced, using only these commands and no unescaped TeX special character.
NEWCOMMAND = re.compile(r"\\newcommand\{\\([A-Za-z]+)\}(?:\[2\])?\{(.*)\}")
CSNAME_DEF = re.compile(r"\\expandafter\\def\\csname ([A-Za-z]+)@([A-Za-z0-9._-]+)@([A-Za-z]+)\\endcsname\{(.*)\}")
ALLOWED_COMMANDS = {"ensuremath", "times", "textit", "csname", "endcsname"}
ESCAPES = {r"\,", r"\%", r"\_", r"\&", r"\#", r"\$", r"\{", r"\}"}


def _balanced(body: str) -> bool:
    depth = 0
    for ch in re.sub(r"\\[{}]", "", body):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def check_latex_macros(text: str, prefix: str) -> list[str]:
    """Fail on anything TeX would reject or misread; return the macro names defined."""
    names: list[str] = []
    for line in text.splitlines():
        if line.startswith("%"):
            continue
        if match := NEWCOMMAND.fullmatch(line):
            name, body = match[1], match[2]
            assert name.startswith(prefix), line
            names.append(name)
            if "[2]" in line:
                assert body == rf"\csname {prefix}@#1@#2\endcsname", line
                continue
        elif match := CSNAME_DEF.fullmatch(line):
            assert match[1] == prefix and match[3] in paper.CONFIGURATION_FIELDS, line
            names.append(f"{match[1]}@{match[2]}@{match[3]}")
            body = match[4]
        else:
            raise AssertionError(f"not a macro definition: {line}")
        assert _balanced(body), line
        plain = body
        for escape in ESCAPES:
            plain = plain.replace(escape, "")
        assert set(re.findall(r"\\([A-Za-z]+)", plain)) <= ALLOWED_COMMANDS, line
        assert not re.search(r"[#$&_^~%]|\\[^A-Za-z]", re.sub(r"\\[A-Za-z]+", "", plain)), line
    assert len(names) == len(set(names)), "a macro is defined twice"
    return names


def test_every_configuration_gets_macros_with_a_configurable_prefix(summary):
    text = paper.macros(summary, prefix="mypaper")
    names = check_latex_macros(text, "mypaper")
    assert not any(n.startswith("specsweep") for n in names)
    assert macro_of(text, "mypaperNgramMEightSpeedup") == math(r"1.50\times")
    assert macro_of(text, "mypaperDraftModelTokS") == math("30.0")
    assert macro_of(text, "mypaperDraftModelSpeedupCI") == math(r"[0.47, 0.53]\times")
    assert macro_of(text, "mypaperBaselineSpeedupCI") == math(paper.NA)
    assert macro_of(text, "mypaperNgramMEightAcceptanceRate") == math(r"81.2\,\%")
    assert r"\expandafter\def\csname mypaper@ngram_m8@TokS\endcsname{\ensuremath{90.2}}" in text
    assert r"\newcommand{\mypaperValue}[2]{\csname mypaper@#1@#2\endcsname}" in text


def test_names_that_spell_alike_are_reached_through_the_accessor(summary):
    clash = summary.assign(configuration=["baseline", "ngram-m8", "ngram_m8"])
    text = paper.macros(clash)
    check_latex_macros(text, "specsweep")
    assert "NgramMEight" not in "".join(paper.macro_names(text))
    assert r"\csname specsweep@ngram-m8@TokS\endcsname" in text and r"\csname specsweep@ngram_m8@TokS" in text


def test_the_golden_summary_gives_valid_macros():
    table = pd.read_csv(Path(__file__).resolve().parents[2] / "fixtures" / "summary_verdicts.csv")
    names = check_latex_macros(paper.macros(table), "specsweep")
    assert sum(n.startswith("specsweep@") for n in names) == len(table) * len(paper.CONFIGURATION_FIELDS)


def test_macro_part_spells_digits():
    assert paper.macro_part("ngram-m24") == "NgramMTwoFour"
    assert paper.macro_part("draft.model_3") == "DraftModelThree"


def macro_of(text: str, name: str) -> str:
    line = next(line for line in text.splitlines() if line.startswith(f"\\newcommand{{\\{name}}}"))
    return line.split("}{", 1)[1][:-1]


@pytest.mark.parametrize(
    "bad",
    [
        r"\newcommand{\specsweepX}{\ensuremath{1.0}",  # unbalanced
        r"\newcommand{\specsweepX}{50%}",  # comment character
        r"\newcommand{\specsweepX}{a_b}",  # subscript outside math
        r"\newcommand{\specsweepX2}{1}",  # digit in a macro name
        r"\newcommand{\specsweepX}{\input{x}}",  # a command the generator never writes
        "\\newcommand{\\specsweepX}{1}\n\\newcommand{\\specsweepX}{2}",  # defined twice
    ],
)
def test_the_syntax_check_rejects_what_tex_would(bad):
    with pytest.raises(AssertionError):
        check_latex_macros(bad, "specsweep")
