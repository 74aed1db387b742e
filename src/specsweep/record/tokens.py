"""The tokens a request produced: the one rule that runs, load windows, their percentiles and goodput, and
``bench_serve.json`` count by.

The count is the engine's own (llama-server ``tokens_predicted``, OpenAI ``usage.completion_tokens``,
SGLang ``meta_info.completion_tokens``), checked against what streamed. How far the two may differ depends on
what an event says: a llama-server event lists its tokens and an SGLang event carries a running total, so
there the stream must carry exactly the engine's count (``exact``); an OpenAI chunk says only that it carries
text, at least one token, and vLLM puts several tokens in one chunk (a speculative burst, and under load the
outputs of several steps merged: its c64 baseline streamed 16,189 tokens in 10,485 chunks), so there the
count may exceed the chunks but never fall below them. A request beyond that is flagged, and no count,
rate, percentile or goodput takes it as valid: its count cannot be trusted, whichever side is wrong.
"""

from __future__ import annotations

from collections.abc import Sequence


def disagreement(reported: int, carried: int, events: int, exact: bool) -> str | None:
    """Why the engine's count ``reported`` cannot be what ``events`` token-carrying events that said they
    carried ``carried`` tokens in all brought; None when it can."""
    if exact and reported != carried:
        return f"the engine reports {reported} tokens but its stream carried {carried}"
    if reported < events:
        return f"the engine reports {reported} tokens but its stream had {events} events, each carrying at least one"
    return None


def per_event(reported: int, streamed: Sequence[int]) -> list[int]:
    """The tokens each event carried, summing to the engine's count: what each event said, and the tokens no
    event named (chunks that say only "text") spread evenly over the events after the first (the first
    token comes alone, from the prompt's pass). ``streamed`` itself where it already sums to the count or
    exceeds it (a flagged request)."""
    missing = reported - sum(streamed)
    if missing <= 0 or not streamed:
        return list(streamed)
    later = max(1, len(streamed) - 1)
    share, rest = divmod(missing, later)
    first = len(streamed) - later  # 1, or 0 for a single event, which then takes every token
    return [n + (0 if i < first else share + (i - first < rest)) for i, n in enumerate(streamed)]
