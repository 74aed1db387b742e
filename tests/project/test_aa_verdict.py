"""The real A/A test's rule (tests/aa_verdict.py) on simulated A/A sweeps (benchmarks/coverage.py's noise,
through the library's own summary, conclusion and paper macros): a difference found by chance at 5 %, as in
one sweep of twenty, passes; a real difference, or a conclusion that disagrees with summary.csv, fails."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from aa_verdict import FALSE_ALARM_P, problems

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import coverage as simulated  # benchmarks/coverage.py

from specsweep.analyse import aggregate, conclusion
from specsweep.report import paper

SAME = {"baseline": 1.0, "same-a": 1.0, "same-b": 1.0, "same-c": 1.0}
CHANCE = 52  # the seed of an A/A sweep where same-b looks 8 % faster: Holm p = 0.017, "significant" at 5 %


def simulated_sweep(folder: Path, effects: dict[str, float], seed: int) -> tuple[pd.DataFrame, str, str]:
    """summary.csv indexed by configuration, the printed conclusion and paper/macros.tex of a simulated sweep
    (2 sessions of 7 runs per configuration, 3 % launch offsets: config/examples/aa.yaml's shape)."""
    configurations, runs = simulated.sweep(np.random.default_rng(seed), effects, 0.03, 2)
    aggregate.write_csv(aggregate.summarise(configurations, runs, {}), folder / "summary.csv")
    summary = pd.read_csv(folder / "summary.csv")
    printed = "\n".join(conclusion.lines(conclusion.read(folder / "summary.csv")))
    return summary.set_index("configuration"), printed, paper.macros(summary)


def test_a_difference_found_by_chance_at_5_percent_is_no_failure(tmp_path):
    summary, printed, macros = simulated_sweep(tmp_path, SAME, CHANCE)
    assert summary.loc["same-b", "significant"] and FALSE_ALARM_P < summary.loc["same-b", "speedup_p_holm"] < 0.05
    assert "significantly faster than the baseline (Holm-adjusted p < 0.05 over 3 comparisons): same-b" in printed
    assert problems(summary, printed, macros) == []


def test_an_a_a_sweep_that_found_nothing_passes(tmp_path):
    summary, printed, macros = simulated_sweep(tmp_path, SAME, 1)
    assert not summary["significant"].astype("boolean").fillna(False).any()
    assert problems(summary, printed, macros) == []


def test_a_real_difference_fails_naming_the_configuration(tmp_path):
    summary, printed, macros = simulated_sweep(tmp_path, {**SAME, "same-c": 1.5}, 1)
    found = problems(summary, printed, macros)
    assert len(found) == 1 and found[0].startswith("same-c: Holm-adjusted p = "), found
    assert f"< {FALSE_ALARM_P}: a difference where none exists" in found[0]


def test_a_conclusion_that_disagrees_with_the_summary_fails(tmp_path):
    summary, printed, macros = simulated_sweep(tmp_path, SAME, CHANCE)
    wrong = "\n".join(
        line.split("): ")[0] + "): none" if line.startswith("  significantly faster") else line
        for line in printed.splitlines()
    )
    assert problems(summary, wrong, macros) == [
        "the conclusion says 'significantly faster than the baseline (Holm-adjusted p < 0.05 over 3 comparisons): "
        "none'; summary.csv says ['same-b']"
    ]
    _, nothing, plain = simulated_sweep(tmp_path, SAME, 1)
    assert "BestName" not in plain and problems(summary, printed, plain) == []  # a best left unnamed is no fault
    named = plain + "\\newcommand{\\specsweepBestName}{same-a}\n"
    assert problems(simulated_sweep(tmp_path, SAME, 1)[0], nothing, named) != []
    assert problems(summary, "", macros) != []  # no conclusion at all


def contend(summary_csv: Path, names: list[str]) -> tuple[pd.DataFrame, str, str]:
    """The simulated sweep's files as if ``names`` had runs measured under contention."""
    summary = pd.read_csv(summary_csv)
    summary.loc[summary["configuration"].isin(names), "contended_runs"] = 1
    summary.to_csv(summary_csv, index=False)
    printed = "\n".join(conclusion.lines(conclusion.read(summary_csv)))
    return summary.set_index("configuration"), printed, paper.macros(summary)


def test_a_contended_configuration_is_left_out_of_the_verdict_lines_and_named(tmp_path):
    """CI's machine had company: the conclusion rightly left contended same-c out of 'no demonstrated
    difference' and named it under CONTENDED; the rule read that as a disagreement with summary.csv."""
    simulated_sweep(tmp_path, SAME, 1)
    summary, printed, macros = contend(tmp_path / "summary.csv", ["same-c"])
    assert "no demonstrated difference (or no test possible): same-a, same-b" in printed
    assert problems(summary, printed, macros) == []
    unnamed = "\n".join(line for line in printed.splitlines() if not line.startswith("  CONTENDED"))
    assert problems(summary, unnamed, macros) == ["the conclusion does not name contended same-c"]


def test_a_contended_baseline_judges_nothing(tmp_path):
    simulated_sweep(tmp_path, SAME, CHANCE)
    summary, printed, macros = contend(tmp_path / "summary.csv", ["baseline"])
    assert problems(summary, printed, macros) == []
    assert problems(summary, printed + "\n  significantly faster", macros) == []
    judged = printed.replace("  best: not declared", "  best: declared")
    assert problems(summary, judged, macros) == [
        "the baseline was contended but the conclusion judged comparisons with it"
    ]


def test_make_bench_measures_the_rate_at_the_tests_own_level():
    assert simulated.AA_TEST_P == FALSE_ALARM_P
