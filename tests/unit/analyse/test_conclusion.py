"""The conclusion printed at the end of a run says what summary.csv says."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from support import listed_names

from specsweep.analyse import conclusion, replicates

# summary_golden.csv's numbers as a sweep of 2 sessions would give them verdicts (a one-session sweep declares nothing)
GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "summary_verdicts.csv"


def test_conclusion_matches_summary_csv():
    table = pd.read_csv(GOLDEN)
    text = conclusion.lines(conclusion.read(GOLDEN))
    measured = table[(table["status"] == "ok") & table["decode_tok_s_mean"].notna()]
    assert text[0] == f"specsweep: {len(measured)} of {len(table)} configurations measured"

    assert text[1] == (
        f"  sessions: 2 per configuration, the replicates of every interval and test; {replicates.FEW_SESSIONS_NOTE}"
    )
    text = text[1:]
    base = table[table["baseline"]].iloc[0]
    assert text[1] == (
        f"  baseline: {base['configuration']}, {base['decode_tok_s_mean']:.1f} tok/s single-request decode rate "
        f"(95 % CI {base['decode_tok_s_ci95_low']:.1f}-{base['decode_tok_s_ci95_high']:.1f})"
    )
    best = measured.loc[measured["decode_tok_s_mean"].idxmax()]
    assert text[2] == (
        f"  best: {best['configuration']}, {best['decode_tok_s_mean']:.1f} tok/s single-request decode rate "
        f"(95 % CI {best['decode_tok_s_ci95_low']:.1f}-{best['decode_tok_s_ci95_high']:.1f}), "
        f"speedup {best['speedup']:.2f}x over the baseline "
        f"(simultaneous 95 % CI {best['speedup_sim95_low']:.2f}-{best['speedup_sim95_high']:.2f}; "
        f"p = {best['speedup_p_value']:.2g}, x {best['comparisons']:.0f} comparisons = "
        f"{best['speedup_p_value'] * best['comparisons']:.2g} (the interval's test), significant)"
    )
    text = text[1:]  # the findings below, in order

    others = measured[~measured["baseline"]]
    significant = others["significant"].astype("boolean").fillna(False).astype(bool)
    assert listed_names(text[2]) == set(others[significant & (others["speedup"] > 1)]["configuration"])
    assert listed_names(text[3]) == set(others[significant & (others["speedup"] < 1)]["configuration"])
    assert listed_names(text[4]) == set(others[~significant]["configuration"])
    noisy = measured[measured["decode_tok_s_ci95_low"].isna() | (measured["decode_tok_s_cv"] > 0.10)]
    assert listed_names(text[5]) == set(noisy["configuration"])
    # 2 sessions and no repeated prompt: one degree of freedom, so 'noisy' is not judged, and said
    unjudged = measured[measured["decode_tok_s_cv"].isna() & measured["decode_tok_s_ci95_low"].notna()]
    assert text[6].startswith("  noisy not judged (2 sessions") and listed_names(text[6]) == set(
        unjudged["configuration"]
    )
    text = text[:6] + text[7:]
    assert listed_names(text[6]) == set(table[table["status"] != "ok"]["configuration"])
    assert "results/summary.csv" in text[7] and "results/figures/" in text[7]
    # the fixture covers each kind of finding, so no list above is trivially empty
    assert all(listed_names(line) for line in text[2:7])


def test_a_baseline_that_wins_is_named(tmp_path):
    table = pd.read_csv(GOLDEN)
    table.loc[table["baseline"], "decode_tok_s_mean"] = 1000.0
    table.loc[~table["baseline"], "speedup"] = 0.1  # every other configuration is slower now
    table.to_csv(tmp_path / "summary.csv", index=False)
    text = conclusion.lines(conclusion.read(tmp_path / "summary.csv"))
    assert text[3] == (
        "  best: baseline, 1000.0 tok/s single-request decode rate (95 % CI 74.9-86.4), a baseline itself: "
        "no configuration beats it"
    )


def test_nothing_measured(tmp_path):
    table = pd.read_csv(GOLDEN)
    table["status"] = "missing"
    table.to_csv(tmp_path / "summary.csv", index=False)
    assert conclusion.lines(conclusion.read(tmp_path / "summary.csv")) == [
        f"specsweep: 0 of {len(table)} configurations measured",
        "  files: results/summary.csv",
    ]


def test_several_baselines_are_listed_and_speedups_are_against_their_own(tmp_path):
    table = pd.read_csv(GOLDEN)
    table.loc[table["configuration"] == "b", "baseline"] = True
    table.to_csv(tmp_path / "summary.csv", index=False)
    text = conclusion.lines(conclusion.read(tmp_path / "summary.csv"))
    assert text[2] == (
        "  baselines: baseline, 80.4 tok/s single-request decode rate (95 % CI 74.9-86.4); "
        "b, 81.1 tok/s single-request decode rate (95 % CI 70.3-93.5)"
    )
    assert ", speedup 1.53x over its baseline (" in text[3]
    assert "b" not in listed_names(text[6])  # a baseline is not compared with itself


def test_the_best_line_names_the_significant_winner_the_paperlisted_names(tmp_path):
    """A faster configuration that is not significant is not called best over a slower significant one
    (paper.best gives the same), and with no significant winner the line says so."""
    from specsweep.report import paper

    table = pd.read_csv(GOLDEN)
    table.loc[table["configuration"] == "flat", ["decode_tok_s_mean", "significant"]] = [500.0, False]
    table.to_csv(tmp_path / "summary.csv", index=False)
    text = conclusion.lines(conclusion.read(tmp_path / "summary.csv"))
    assert text[3].startswith("  best: a, ") and paper.best(table)["configuration"] == "a"
    table["significant"] = False
    table.to_csv(tmp_path / "summary.csv", index=False)
    text = conclusion.lines(conclusion.read(tmp_path / "summary.csv"))
    assert text[3].startswith("  best: flat, 500.0 tok/s single-request decode rate") and text[3].endswith(
        "no configuration is shown to beat its baseline"
    )
    assert paper.best(table) is None


def test_the_best_verdict_and_its_simultaneous_interval_say_the_same(tmp_path):
    """Issue 33: a fresh sweep named 'best: ngram-default x1.27 (simultaneous 95 % CI 0.99-1.62; Holm p 0.048,
    significant)'. Holm's step-down declared what the quoted (Bonferroni) interval did not: no best is named then,
    and the verdict quoted is the interval's own test."""
    from specsweep.report import paper

    table = pd.read_csv(GOLDEN)
    a = table["configuration"] == "a"
    table.loc[a, ["speedup_p_value", "speedup_p_holm", "speedup_sim95_low"]] = [0.0096, 0.048, 0.99]
    table.to_csv(tmp_path / "summary.csv", index=False)
    text = conclusion.lines(conclusion.read(tmp_path / "summary.csv"))
    assert text[3] == (
        "  best: a, 123.1 tok/s single-request decode rate (95 % CI 106.7-142.0), speedup 1.53x over the baseline "
        "(simultaneous 95 % CI 0.99-2.09; p = 0.0096, x 6 comparisons = 0.058 (the interval's test), not "
        "significant as the selected best (Holm p = 0.048)): none is confirmed as the best: Holm declares some "
        "faster, but no simultaneous interval excludes 1"
    )
    assert "a +53.0 %" in text[4]  # still significantly faster than the baseline, by Holm
    assert paper.best(table) is None


def test_the_paper_names_no_contended_winner_as_the_console_names_none(tmp_path):
    """One rule for best (conclusion.best): a winner measured under contention is neither the console's
    nor the paper's, whose Best* macros would otherwise name what the console refuses to."""
    from specsweep.report import paper

    table = pd.read_csv(GOLDEN)
    assert paper.best(table)["configuration"] == "a"
    table["contended_runs"] = [2 if name == "a" else 0 for name in table["configuration"]]
    table.to_csv(tmp_path / "summary.csv", index=False)
    text = conclusion.lines(conclusion.read(tmp_path / "summary.csv"))
    chosen = paper.best(table)
    assert chosen is None or chosen["configuration"] != "a"
    assert not any(line.startswith("  best: a,") for line in text)


def test_below_the_sessions_that_find_a_noisier_configuration_the_conclusion_says_so(tmp_path):
    table = pd.read_csv(GOLDEN)
    few = conclusion.lines(conclusion.read(GOLDEN))[1]
    assert few.endswith(f"; {replicates.FEW_SESSIONS_NOTE}")
    table["sessions"] = replicates.OWN_SPREAD_SESSIONS
    table.to_csv(tmp_path / "summary.csv", index=False)
    enough = conclusion.lines(conclusion.read(tmp_path / "summary.csv"))[1]
    assert (
        enough
        == f"  sessions: {replicates.OWN_SPREAD_SESSIONS} per configuration, the replicates of every interval and test"
    )
