"""analyse/search.py: the next value worth measuring of the swept speculative flag."""

from __future__ import annotations

import pytest

from specsweep.analyse import search


def test_between_a_winning_2_and_a_losing_5_it_proposes_3():
    found = search.propose({0: 1.0, 1: 1.10, 2: 1.15, 5: 1.05})
    assert found.best == 2
    assert found.next_values == (3,)
    assert "between the best 2 and 5" in found.why


def test_the_gap_below_the_best_is_narrowed_too():
    assert search.propose({0: 1.0, 4: 1.2, 5: 1.1}).next_values == (2,)


def test_the_predicted_optimum_inside_a_gap_is_preferred_to_the_middle():
    assert search.propose({0: 1.0, 2: 1.15, 8: 1.05}, predicted=3.2).next_values == (1, 3)
    # the middle, rounded towards the best, without it
    assert search.propose({0: 1.0, 2: 1.15, 8: 1.05}).next_values == (1, 5)


def test_a_prediction_outside_the_gaps_is_not_followed():
    assert search.propose({0: 1.0, 2: 1.15, 5: 1.05}, predicted=12.0).next_values == (1, 3)


def test_a_best_that_is_the_largest_measured_is_doubled():
    found = search.propose({0: 1.0, 1: 1.1, 2: 1.2})
    assert found.next_values == (4,)
    assert "may still rise" in found.why


def test_measured_neighbours_stop_the_search_and_say_confirm():
    found = search.propose({0: 1.0, 1: 1.1, 2: 1.2, 3: 1.15, 5: 1.0})
    assert found.next_values == ()
    assert search.CONFIRM in found.why


def test_the_baseline_best_with_1_measured_needs_nothing_more():
    assert search.propose({0: 1.2, 1: 1.1, 3: 1.0}).next_values == ()


def test_the_baseline_is_the_lower_end_even_when_not_given():
    assert search.propose({3: 1.2, 4: 1.1}).next_values == (2,)


def test_next_values_is_the_union_of_the_levels_proposals():
    c1 = search.propose({0: 1.0, 2: 1.2, 5: 1.1})
    c16 = search.propose({0: 1.2, 2: 1.0, 5: 0.8})
    assert search.next_values([c1, c16]) == [1, 3]


def test_nothing_measured_is_an_error():
    with pytest.raises(ValueError, match="no measured value"):
        search.propose({})
