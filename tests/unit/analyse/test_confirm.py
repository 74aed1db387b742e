"""The confirmed winner: what is confirmed, and its speedup from the fresh sessions alone."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from run_records import run_record

from specsweep.analyse import conclusion, confirm, replicates
from specsweep.maths import stats

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "summary_verdicts.csv"


def _rows(table: pd.DataFrame, tmp_path: Path) -> list[dict[str, str]]:
    path = tmp_path / "summary.csv"
    table.to_csv(path, index=False)
    return conclusion.read(path)


def test_the_declared_best_is_confirmed_against_its_baseline(tmp_path):
    rows = conclusion.read(GOLDEN)
    best = conclusion.best([r for r in rows if conclusion.is_measured(r)])
    choice = confirm.choose(rows)
    assert best is not None and choice is not None
    assert choice.configuration == best["configuration"] and choice.declared
    assert choice.baseline == next(r["configuration"] for r in rows if r["baseline"] == "True")
    assert choice.chosen_speedup == float(best["speedup"])


def test_without_a_declared_best_the_leading_candidate_is_confirmed(tmp_path):
    table = pd.read_csv(GOLDEN)
    table["significant"] = False
    rows = _rows(table, tmp_path)
    choice = confirm.choose(rows)
    measured = table[(table["status"] == "ok") & table["decode_tok_s_mean"].notna() & ~table["baseline"]]
    assert choice is not None and not choice.declared
    assert choice.configuration == measured.loc[measured["decode_tok_s_mean"].idxmax(), "configuration"]


def test_nothing_is_confirmed_without_a_baseline_or_a_candidate(tmp_path):
    table = pd.read_csv(GOLDEN)
    assert confirm.choose(_rows(table.assign(baseline=False), tmp_path)) is None
    assert confirm.choose(_rows(table[table["baseline"]], tmp_path)) is None


def _sessions(rates: list[float]) -> list[list]:
    return [[run_record({"client": {"decode_tokens_per_s": rate}})] for rate in rates]


def test_the_confirmed_speedup_comes_from_the_fresh_sessions_alone():
    winner, baseline = [110.0, 112.0, 111.0], [100.0, 101.0, 99.0]
    result = confirm.confirmed(_sessions(winner), _sessions(baseline))
    sd, df = replicates.pooled_sd([winner, baseline])
    assert df == 4
    expected = math.exp(sum(map(math.log, winner)) / 3 - sum(map(math.log, baseline)) / 3)
    assert math.isclose(result.ratio, expected) and result.ci_low < expected < result.ci_high
    half = replicates.Pooled(replicates.SESSION, sd, df).t() * sd * math.sqrt(2 / 3)
    assert math.isclose(math.log(result.ci_high / result.ratio), half)
    one = confirm.confirmed_rates([110.0], [100.0])  # one session each: the ratio, no interval
    assert math.isclose(one.ratio, 1.1) and math.isnan(one.ci_low)


def test_one_fresh_session_each_takes_its_interval_from_the_choosing_sessions_spread():
    choosing = [[120.0, 115.0, 118.0], [100.0, 103.0]]
    sd, df = replicates.pooled_sd(choosing)
    one = confirm.confirmed_rates([110.0], [100.0], spread=(sd, df))
    assert one.df == df == 3 and math.isclose(one.ratio, 1.1)  # the estimate: the fresh sessions alone
    half = replicates.Pooled(replicates.SESSION, sd, df).t() * sd * math.sqrt(2)
    assert math.isclose(math.log(one.ci_high / one.ratio), half)
    # with fresh spread too: both pooled, their degrees of freedom added
    two = confirm.confirmed_rates([110.0, 112.0], [100.0, 101.0], spread=(sd, df))
    assert two.df == df + 2
    assert math.isclose(
        two.se**2, (sd**2 * df + replicates.pooled_sd([[110.0, 112.0], [100.0, 101.0]])[0] ** 2 * 2) / 5
    )


def test_the_choice_reads_the_choosing_sessions_spread_back_from_its_interval(tmp_path):
    rows = _rows(pd.read_csv(GOLDEN), tmp_path)
    choice = confirm.choose(rows)
    row = next(r for r in rows if r["configuration"] == choice.configuration)
    assert choice.spread_df == float(row["ci_df"]) > 0 and choice.spread_sd > 0
    sessions = {r["configuration"]: float(r["sessions"]) for r in rows}
    se = choice.spread_sd * math.sqrt(1 / sessions[choice.configuration] + 1 / sessions[choice.baseline])
    half = stats.t_critical(choice.spread_df) * se
    assert math.isclose(math.exp(math.log(float(row["speedup"])) + half), float(row["speedup_ci95_high"]), rel_tol=1e-3)
    path = tmp_path / "choice.json"  # the checkpoint's record carries it to the confirmation job
    confirm.write_choice(choice, path)
    assert confirm.read_choice(path) == choice
    # an interval from the choice's own spread (Welch) is not the pooled one: nothing to read back
    table = pd.read_csv(GOLDEN)
    table.loc[table["configuration"] == choice.configuration, "warnings"] = replicates.OWN_SPREAD_NOTE
    own = confirm.choose(_rows(table, tmp_path))
    assert own.configuration == choice.configuration and own.spread_df == 0 and math.isnan(own.spread_sd)


def test_confirmation_csv_and_its_conclusion_line(tmp_path):
    choice = confirm.Choice("ngram", "baseline", False, 1.2)
    path = tmp_path / "confirmation.csv"
    confirm.write(choice, confirm.confirmed_rates([110.0, 112.0], [100.0, 101.0]), 2, path)
    assert list(pd.read_csv(path).columns) == list(confirm.COLUMNS)
    (line,) = confirm.conclusion_lines(path)
    assert line.startswith("  confirmed in 2 fresh sessions: ngram (leading candidate (not declared best)) 1.10x")
    assert "95 % CI" in line and "said 1.20x" in line
    confirm.write(None, None, 2, path)
    assert "nothing to confirm" in confirm.conclusion_lines(path)[0]


def test_the_plan_counts_the_confirmation_sessions():
    assert confirm.plan_lines(0) == []
    (line,) = confirm.plan_lines(3)
    assert "6 more sessions" in line and "benchmark.confirm_sessions: 3" in line


def test_the_confirmation_counts_the_fresh_sessions_with_counted_runs():
    choice = confirm.Choice("ngram", "baseline", True, 1.2)
    runs = {
        "ngram-c1": [run_record({"client": {"decode_tokens_per_s": 110.0}})],
        "ngram-c2": [run_record({"client": {"decode_tokens_per_s": 112.0}, "excluded": "rate check"})],
        "baseline-c1": [run_record({"client": {"decode_tokens_per_s": 100.0}})],
        "baseline-c2": [run_record({"client": {"decode_tokens_per_s": 101.0}})],
        "ngram": [run_record({"client": {"decode_tokens_per_s": 150.0}})],  # a choosing session: never read
    }
    result, counted = confirm.confirmed_runs(choice, 2, runs)
    assert counted == 1
    assert math.isclose(result.ratio, 110.0 / math.sqrt(100.0 * 101.0))
