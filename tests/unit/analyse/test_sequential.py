"""Sessions where the answer is open: repeated p-values and intervals, the verdicts of a look, the rounds."""

from __future__ import annotations

import math

import pytest
from run_records import run_record

from specsweep.analyse import replicates, sequential
from specsweep.maths import stats
from specsweep.plan.design import SessionRange, session_range

SESSIONS = SessionRange(2, 6)


def test_sessions_read_as_an_integer_or_min_and_max():
    assert session_range({"sessions": 3}) == SessionRange(3, 3)
    assert not session_range({}).sequential
    found = session_range({"sessions": {"min": 2, "max": 6}})
    assert found == SESSIONS and found.sequential and found.looks == 5


def test_a_repeated_p_is_larger_than_the_nominal_one_and_one_look_leaves_it_alone():
    for p in (0.001, 0.01, 0.05):
        assert p < sequential.repeated_p(p, SESSIONS, 4) < 5 * p  # 5 looks: below Bonferroni's 5 x p
    assert sequential.repeated_p(0.01, SessionRange(3, 3), 4) == 0.01
    assert math.isnan(sequential.repeated_p(math.nan, SESSIONS, 4))
    nominal = sequential.nominal_level(stats.ALPHA, SESSIONS, 4)
    assert stats.ALPHA / 5 < nominal < stats.ALPHA
    assert sequential.repeated_p(nominal, SESSIONS, 4) == pytest.approx(stats.ALPHA, abs=0.002)


def _rates(log_means: dict[str, float], sessions: int) -> dict[str, list[float]]:
    wobble = [0.03, -0.03, 0.02, -0.02, 0.0, 0.01][:sessions]
    return {name: [math.exp(mean + w) for w in wobble] for name, mean in log_means.items()}


def test_a_look_declares_clear_differences_shows_equivalence_and_leaves_the_rest_open():
    rates = _rates({"base": 0.0, "fast": 0.3, "slow": -0.3, "same": 0.0, "unclear": 0.03}, 6)
    found = sequential.look(rates, "base", SESSIONS, 5, detect_pct=5)
    assert found["fast"].verdict == sequential.FASTER and found["slow"].verdict == sequential.SLOWER
    assert found["same"].verdict == sequential.EQUIVALENT and found["unclear"].verdict == sequential.OPEN
    # the repeated interval is wider than the one-look interval of the same data
    one_look = replicates.compare_rates(rates["fast"], rates["base"], sequential._pooled(rates))
    assert found["fast"].ci_low < one_look.ci_low and found["fast"].ci_high > one_look.ci_high


def test_rounds_continue_only_the_open_configurations_with_the_baseline_up_to_the_maximum():
    names = ["base", "fast", "unclear"]
    state = sequential.start(names, "base", SESSIONS)
    truth = {"base": 0.0, "fast": 0.3, "unclear": 0.03}
    following = sequential.after_look(state, _rates(truth, 2), detect_pct=5)
    assert "unclear" in following and following[0] == "base"
    while following:
        rates = {n: _rates(truth, 6)[n][: state.measured[n]] for n in names}
        following = sequential.after_look(state, rates, detect_pct=5)
    assert state.decided["fast"].verdict == sequential.FASTER and state.measured["fast"] < SESSIONS.max
    assert state.measured["base"] == state.measured["unclear"] == SESSIONS.max
    assert state.decided["unclear"].verdict == sequential.OPEN and state.decided["unclear"].look == SESSIONS.looks
    assert len(state.looks) == SESSIONS.looks


def test_a_maximum_below_the_minimum_is_refused_naming_the_key():
    with pytest.raises(ValueError, match="benchmark/sessions: max 2 is below min 3"):
        session_range({"sessions": {"min": 3, "max": 2}})


def test_the_plan_says_the_rounds_run_and_what_they_can_save(tmp_path):
    from specsweep.plan import design
    from specsweep.plan.config import Configuration

    base = {n: Configuration(n, "llama", "llamacpp", n == "base", {}, {}, group=n) for n in ("base", "a", "b")}
    benchmark = {"sessions": {"min": 2, "max": 6}, "runs": 3, "max_tokens": 16, "order": "bracket"}
    planned = design.with_end_baseline(design.with_sessions(base, SESSIONS.max), "bracket")
    assert sequential.plan_lines(planned, {**benchmark, "sessions": 6}, tmp_path) == []
    rounds, cost = sequential.plan_lines(planned, benchmark, tmp_path)
    assert rounds.startswith("Sessions: 2 to 6 per configuration (benchmark.sessions), in rounds: ")
    # each configuration's first 2 and the bracket's end; the fixed design measures all 19
    assert cost.startswith("Rounds: 7 to 19 sessions, ") and "saves 12 sessions against the fixed design" in cost
    low, high = (float(m) for m in cost.split(" sessions, ")[1].split(" min")[0].split(" to "))
    assert 0 < low < high
    unpaired = {n: c for n, c in planned.items() if not c.baseline}
    (fixed,) = sequential.plan_lines(unpaired, benchmark, tmp_path)
    assert fixed.endswith(
        "no baseline to compare with, so no rounds: every configuration is measured in 6 sessions, the fixed design"
    )


def test_a_replay_of_the_sessions_measured_so_far_gives_the_same_rounds_as_looking_after_each():
    names = ["base", "fast", "unclear"]
    truth = {"base": 0.0, "fast": 0.3, "unclear": 0.03}
    state = sequential.start(names, "base", SESSIONS)
    following = sequential.after_look(state, _rates(truth, 2), detect_pct=5)
    following = sequential.after_look(state, {n: _rates(truth, 6)[n][: state.measured[n]] for n in names}, detect_pct=5)
    # a checkpoint sees only the files: every configuration's sessions so far, stopped ones shorter
    measured = {n: _rates(truth, 6)[n][: state.measured[n] - (n in following)] for n in names}
    replayed, again = sequential.replay(measured, "base", SESSIONS, detect_pct=5)
    assert again == following and replayed.measured == state.measured and replayed.decided == state.decided


def test_a_round_is_written_and_read_back(tmp_path):
    path = tmp_path / "round.json"
    sequential.write_round(path, ["base", "unclear"])
    assert sequential.read_round(path) == ["base", "unclear"]


def test_a_round_gives_the_open_configurations_next_session_by_its_name():
    from specsweep.plan.design import session_name

    truth = {"base": 0.0, "fast": 0.3, "unclear": 0.03}
    rates = _rates(truth, 2)
    sessions = {name: [name] + [session_name(name, k) for k in range(2, SESSIONS.max + 1)] for name in truth}
    runs = {
        session: [run_record({"client": {"decode_tokens_per_s": rates[name][k]}})]
        for name, names in sessions.items()
        for k, session in enumerate(names[:2])
    }
    following = sequential.next_sessions(sessions, runs, "base", SESSIONS, detect_pct=5)
    assert following == [session_name("base", 3), session_name("unclear", 3)]


def test_the_conclusion_says_how_many_sessions_the_rounds_saved():
    (line,) = sequential.saved_lines(9, 12)
    assert line.startswith("  rounds: 9 of 12 sessions measured, 3 saved against the fixed design")


def test_the_candidates_for_best_are_those_not_shown_slower_than_the_leader_fastest_first():
    rates = _rates({"a": 0.0, "b": 0.01, "c": -0.3}, 6)
    assert sequential.leader(rates) == "b"
    assert sequential.contenders(rates, detect_pct=0.5) == ["b", "a"]  # c is shown slower than the leader b
    # within ±detect_pct of the leader, shown: the race is decided (the choice can not be off by more)
    assert sequential.contenders(rates, detect_pct=10) == []
    # one left: decided
    assert sequential.contenders(_rates({"a": 0.0, "c": -0.3}, 6), detect_pct=0.5) == []
    # one session each: no session spread, nobody is shown slower
    assert sequential.contenders(_rates({"a": 0.0, "b": 0.01, "c": -0.3}, 1), detect_pct=0.5) == ["b", "a", "c"]


def test_a_race_over_levels_gives_the_next_sessions_to_every_open_levels_candidates_leaders_first():
    first = _rates({"a": 0.0, "b": 0.01, "c": -0.3}, 6)  # open between b and a
    second = _rates({"a": -0.3, "b": -0.3, "c": 0.0}, 6)  # c shown fastest: decided
    third = _rates({"a": 0.02, "b": -0.3, "c": 0.0}, 6)  # open between a and c
    assert sequential.race([first, second], detect_pct=0.5) == ["b", "a"]
    assert sequential.race([first, second, third], detect_pct=0.5) == ["a", "b", "c"]
    assert sequential.race([second], detect_pct=0.5) == []


def test_rounds_continue_the_candidates_for_best_after_their_verdict_against_the_baseline():
    names = ["base", "fast", "faster"]
    state = sequential.start(names, "base", SESSIONS)
    truth = {"base": 0.0, "fast": 0.3, "faster": 0.31}
    following = ["base", "fast", "faster"]
    while following:
        rates = {n: _rates(truth, 6)[n][: state.measured[n]] for n in names}
        following = sequential.after_look(state, rates, detect_pct=0.5)
    # both shown faster than the baseline at the first look, which stops; the two race on to the maximum
    assert state.decided["fast"].verdict == state.decided["faster"].verdict == sequential.FASTER
    assert state.decided["fast"].look == 1 and state.measured["base"] == SESSIONS.min
    assert state.measured["fast"] == state.measured["faster"] == SESSIONS.max
    assert len(state.looks) == SESSIONS.looks and [v.look for v in state.looks[-1].values()] == [SESSIONS.looks] * 2
