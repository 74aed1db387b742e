"""record/tokens.py: the tokens a request produced, the engine's count checked against its stream."""

from __future__ import annotations

from specsweep.record.tokens import disagreement, per_event


def test_an_exact_stream_must_carry_the_engines_count():
    # llama-server lists each event's tokens: a stream carrying 4 of 16 tokens whose final event claims 16
    assert disagreement(16, 4, 4, exact=True) == "the engine reports 16 tokens but its stream carried 4"
    assert disagreement(16, 16, 4, exact=True) is None


def test_a_chunk_carries_at_least_one_token_and_may_carry_more():
    # vLLM's OpenAI chunks: several tokens each under speculation or load, but never none
    assert disagreement(16, 4, 4, exact=False) is None
    assert "4 events" in disagreement(3, 4, 4, exact=False)


def test_the_tokens_no_event_named_are_spread_after_the_first_event():
    assert per_event(11, [1, 1, 1, 1]) == [1, 4, 3, 3]
    assert per_event(5, [1]) == [5]
    assert per_event(4, [1, 3]) == [1, 3]  # already the count
    assert per_event(3, [2, 2]) == [2, 2]  # a flagged request keeps what streamed
    assert sum(per_event(1000, [1] * 7)) == 1000
