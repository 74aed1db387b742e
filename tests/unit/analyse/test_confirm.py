"""The confirmed winner: what is confirmed, and its speedup from the fresh sessions alone."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import pandas as pd
from run_records import run_record

from specsweep.analyse import conclusion, confirm, loadbest, replicates
from specsweep.maths import stats
from specsweep.record.arrivals import encode_arrivals
from specsweep.record.results import Window

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
    confirm.write_choices([choice], path)
    assert confirm.read_choices(path) == [choice]
    # an interval from the choice's own spread (Welch) is not the pooled one: nothing to read back
    table = pd.read_csv(GOLDEN)
    table.loc[table["configuration"] == choice.configuration, "warnings"] = replicates.OWN_SPREAD_NOTE
    own = confirm.choose(_rows(table, tmp_path))
    assert own.configuration == choice.configuration and own.spread_df == 0 and math.isnan(own.spread_sd)


def test_confirmation_csv_and_its_conclusion_lines(tmp_path):
    single = confirm.Choice("ngram", "baseline", False, 1.2)
    at_c4 = confirm.Choice("ngram-m8", "baseline", True, 1.15, "c4")
    path = tmp_path / "confirmation.csv"
    confirm.write(
        [
            confirm.Confirmed(single, confirm.confirmed_rates([110.0, 112.0], [100.0, 101.0]), 2),
            confirm.Confirmed(at_c4, confirm.confirmed_rates([112.0], [100.0]), 1),
        ],
        path,
    )
    table = pd.read_csv(path)
    assert list(table.columns) == list(confirm.COLUMNS) and list(table["load"]) == ["single", "c4"]
    first, second = confirm.conclusion_lines(path)
    assert first.startswith("  confirmed in 2 fresh sessions: ngram (leading candidate (not declared best)) 1.10x")
    assert "95 % CI" in first and "said 1.20x" in first
    # a load level's line names it; one fresh session each without the choosing sessions' spread: said in words
    assert second.startswith("  confirmed in 1 fresh sessions at c4: ngram-m8 (best) 1.12x over baseline (no CI: ")
    assert "no spread of the choosing sessions" in second and "said 1.15x" in second
    confirm.write([], path)
    assert "nothing to confirm" in confirm.conclusion_lines(path)[0]


def test_every_column_is_documented_with_its_meaning():
    from doc_tables import documented_columns

    documented = documented_columns("summary.md", "## confirmation.csv columns")
    assert list(documented.items()) == list(confirm.COLUMNS.items())


def test_the_plan_counts_the_confirmation_sessions():
    assert confirm.plan_lines(0, 2) == []
    (line,) = confirm.plan_lines(3, 0)
    assert "6 more sessions" in line and "benchmark.confirm_sessions: 3" in line and "load level" not in line
    (line,) = confirm.plan_lines(3, 2)
    assert "6 more sessions" in line and "up to 6 more for the 2 load level(s)' winners" in line


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


# load.csv's rows as the checkpoint reads them (csv strings): per level, the verdicts of analyse/loadbest.py
def _load_row(label: str, name: str, verdict: str, mean: float, speedup: str = "", **more: str) -> dict[str, str]:
    return {
        "configuration": name,
        "baseline": str(name == "baseline"),
        "load": label,
        "level_verdict": verdict,
        "output_tok_s_mean": str(mean),
        "speedup": speedup,
        "replicate": "window (within-launch)",
        "sessions": "1",
        **more,
    }


LOAD_ROWS = [
    _load_row("c1", "baseline", loadbest.SLOWER, 80.0),
    _load_row("c1", "ngram", loadbest.BEST, 100.0, "1.25"),
    _load_row("c1", "draft", loadbest.EQUIVALENT, 99.0, "1.24"),
    # not resolved: its fastest candidate beside the baseline, the baseline itself faster still
    _load_row("c4", "baseline", loadbest.OPEN, 130.0),
    _load_row("c4", "ngram", loadbest.OPEN, 120.0, "0.92"),
    _load_row("c4", "draft", loadbest.OPEN, 125.0, "0.96"),
    _load_row("c4", "other", loadbest.SLOWER, 140.0, "1.08"),  # shown slower than another: never the choice
    # the baseline best: nothing to confirm at c16
    _load_row("c16", "baseline", loadbest.BEST, 200.0),
    _load_row("c16", "ngram", loadbest.SLOWER, 150.0, "0.75"),
]


def test_each_load_levels_best_else_its_leading_candidate_is_confirmed():
    choices = confirm.choose_levels(LOAD_ROWS)
    by_level = {choice.load: choice for choice in choices}
    assert list(by_level) == ["c1", "c4"]  # c16's best is the baseline
    best = next(r for r in LOAD_ROWS if r["load"] == "c1" and r["level_verdict"] == loadbest.BEST)
    assert (by_level["c1"].configuration, by_level["c1"].declared) == (best["configuration"], True)
    assert by_level["c1"].chosen_speedup == float(best["speedup"]) and by_level["c1"].baseline == "baseline"
    open_ = [r for r in LOAD_ROWS if r["load"] == "c4" and r["level_verdict"] == loadbest.OPEN]
    leading = max((r for r in open_ if r["baseline"] == "False"), key=lambda r: float(r["output_tok_s_mean"]))
    assert (by_level["c4"].configuration, by_level["c4"].declared) == (leading["configuration"], False)
    # windows of one launch: no session spread to pool
    assert all(math.isnan(c.spread_sd) and c.spread_df == 0 for c in choices)
    # one launch: every level not judged, the fastest beside the baseline confirmed, not declared
    unjudged = [{**r, "level_verdict": loadbest.NOT_JUDGED} for r in LOAD_ROWS if r["load"] == "c1"]
    (choice,) = confirm.choose_levels(unjudged)
    assert (choice.configuration, choice.declared) == ("ngram", False)


def test_the_choices_and_the_sessions_that_confirm_them(tmp_path):
    single = confirm.choose(conclusion.read(GOLDEN))
    choices = confirm.choices_of(conclusion.read(GOLDEN), LOAD_ROWS)
    assert choices == [single, *confirm.choose_levels(LOAD_ROWS)]
    path = tmp_path / "choice.json"
    confirm.write_choices(choices, path)
    assert repr(confirm.read_choices(path)) == repr(choices)  # repr: NaN spreads compare unequal
    # every chosen configuration and baseline once, however many choices name it, round by round
    names = list(dict.fromkeys(n for c in choices for n in (c.configuration, c.baseline)))
    assert len(names) < 2 * len(choices)
    assert confirm.sessions_of(choices, 2) == [f"{n}-c{k}" for k in (1, 2) for n in names]
    assert confirm.sessions_of([], 2) == [] and confirm.choices_of([], []) == []
    # the record of an earlier sweep (an archive's): the single-request choice alone, as an object
    path.write_text(json.dumps({k: v for k, v in asdict(single).items() if k != "load"}))
    assert confirm.read_choices(path) == [single]
    path.write_text("{}")
    assert confirm.read_choices(path) == []


def test_a_levels_choice_reads_the_choosing_sessions_spread_back_from_its_paired_interval():
    from specsweep.analyse.loadsummary import paired_speedup

    # three sessions each, session k paired with the baseline's session k, as load.csv's interval
    chosen, base = [101.0, 104.0, 99.0], [80.0, 81.5, 79.0]
    found = paired_speedup(dict(enumerate(chosen)), dict(enumerate(base)))
    interval = {"speedup_ci95_low": str(found.low), "speedup_ci95_high": str(found.high)}
    rows = [
        _load_row("c2", "baseline", loadbest.SLOWER, 80.0, replicate="session", sessions="3"),
        _load_row("c2", "ngram", loadbest.BEST, 101.0, str(found.ratio), replicate="session", sessions="3", **interval),
    ]
    (choice,) = confirm.choose_levels(rows)
    logs = [math.log(x / y) for x, y in zip(chosen, base, strict=True)]
    mean = sum(logs) / 3
    # a pair's log ratio varies as two sessions' do: a session's spread is its standard deviation / √2
    assert choice.spread_df == 2
    assert math.isclose(choice.spread_sd, math.sqrt(sum((d - mean) ** 2 for d in logs) / 2 / 2), rel_tol=1e-9)
    # a baseline with more sessions (the bracket's end): the pairs are the fewer side's
    rows[0] = {**rows[0], "sessions": "4"}
    assert confirm.choose_levels(rows)[0].spread_df == 2


def _window(label: str, number: int, duration_s: float, warmup: bool = False) -> Window:
    """A window whose one request's 10 tokens all arrive within it: its steady rate is 10 / duration_s."""
    arrivals = [0.01 * (i + 1) for i in range(10)]
    request = {
        "index": 0,
        "sent_s": 0.0,
        "prompt_index": 0,
        "category": "c",
        "tokens": 10,
        "e2e_s": arrivals[-1],
        "arrivals_us": encode_arrivals(arrivals),
        "event_tokens": [1] * 10,
        "text_sha256": "t",
    }
    level = {"kind": "concurrency", "value": int(label[1:]), "label": label}
    return Window.from_json(
        {"level": level, "window": number, "duration_s": duration_s, "requests": [request], "warmup": warmup}
    )


def test_a_levels_confirmed_speedup_comes_from_the_fresh_sessions_windows_at_that_level():
    durations = {
        "ngram-c1": (0.5, 0.52),
        "ngram-c2": (0.51, 0.5),
        "baseline-c1": (0.6, 0.61),
        "baseline-c2": (0.62, 0.6),
    }
    windows = {
        name: [
            _window("c4", -1, 5.0, warmup=True),  # the warmup window: in no table
            *(_window("c4", w, d) for w, d in enumerate(found)),
            *(_window("c1", w, 9.0 * d) for w, d in enumerate(found)),  # another level: not read
        ]
        for name, found in durations.items()
    }
    windows["ngram"] = [_window("c4", 0, 0.1)]  # a choosing session: never read
    choice = confirm.Choice("ngram", "baseline", True, 1.3, "c4")
    result, counted = confirm.confirmed_windows(choice, 2, windows)

    def log_rate(name: str) -> float:  # a session's rate: the mean of its windows' 10 tokens / duration
        return math.log(sum(10 / d for d in durations[name]) / 2)

    expected = math.exp(
        (log_rate("ngram-c1") + log_rate("ngram-c2")) / 2 - (log_rate("baseline-c1") + log_rate("baseline-c2")) / 2
    )
    assert counted == 2 and math.isclose(result.ratio, expected) and result.df == 2
    del windows["baseline-c2"]  # a fresh session without windows at the level does not count
    result, counted = confirm.confirmed_windows(choice, 2, windows)
    assert counted == 1 and math.isclose(
        result.ratio, math.exp((log_rate("ngram-c1") + log_rate("ngram-c2")) / 2 - log_rate("baseline-c1"))
    )
    # confirmed_of: the single-request choice from the runs, a level's from the windows
    assert confirm.confirmed_of(choice, 2, {}, windows) == confirm.Confirmed(choice, result, 1)


def test_a_confirmation_table_from_before_the_load_column_still_reads(tmp_path):
    """A sweep confirmed before the load levels' rows (no load column) is resumed: its conclusion still reads."""
    path = tmp_path / "confirmation.csv"
    path.write_text(
        "configuration,baseline,declared,chosen_speedup,sessions,speedup,speedup_ci95_low,speedup_ci95_high,"
        "speedup_p_value\nngram-m8,baseline,False,1.10144,2,0.8346,0.6743,1.0331,0.0677\n"
    )
    (line,) = confirm.conclusion_lines(path)
    assert line.startswith("  confirmed in 2 fresh sessions: ngram-m8 (leading candidate") and " at " not in line
    assert "0.83x over baseline (95 % CI 0.67-1.03" in line
