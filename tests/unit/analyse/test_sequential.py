"""Sessions where the answer is open: repeated p-values and intervals, the verdicts of a look, the rounds."""

from __future__ import annotations

import math

import pytest

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


def test_the_plan_says_a_range_is_measured_at_its_maximum_until_the_rounds_run():
    assert sequential.plan_lines(session_range({"sessions": 3})) == []
    (line,) = sequential.plan_lines(SESSIONS)
    assert line.startswith("Sessions: 2 to 6 per configuration") and "measured in 6 sessions" in line


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
