"""Log lines verbatim from llama.cpp b11434 (tools/server/server-context.cpp, print_timing),
as captured in shared/notes/llamacpp-embedded.md and by tests/test_end_to_end.py on the real server."""

from __future__ import annotations

from specsweep.parsers.llamacpp import parse

LOG = """\
0.00.746.089 I common_speculative_init_result: loading draft model 'models/x.gguf'
0.16.113.800 I slot print_timing: id  0 | task 8 | prompt eval time =      95.64 ms /    12 tokens (    7.97 ms per token,   125.48 tokens per second)
0.16.113.834 I slot print_timing: id  0 | task 8 |        eval time =   14321.77 ms /   500 tokens (   28.70 ms per token,    34.84 tokens per second)
0.16.113.850 I slot print_timing: id  0 | task 8 |       total time =   14417.41 ms /   512 tokens
0.16.113.891 I slot print_timing: id  0 | task 8 | draft acceptance = 0.84397 (  357 accepted /   423 generated), mean len =  3.53
0.31.513.328 I slot print_timing: id  0 | task 152 |        eval time =    5000.00 ms /   500 tokens (   10.00 ms per token,   100.00 tokens per second)
0.31.513.400 I slot print_timing: id  0 | task 152 | something new = 1
"""


def test_rows_per_request():
    parsed = parse(LOG.splitlines())
    assert len(parsed.rows) == 2
    first, second = parsed.rows
    assert first["task"] == 8 and first["prompt_tokens"] == 12 and first["prompt_ms"] == 95.64
    assert first["eval_ms"] == 14321.77 and first["eval_tokens"] == 500
    assert (first["draft_accepted"], first["draft_generated"], first["draft_mean_len"]) == (357, 423, 3.53)
    assert second["task"] == 152 and second["draft_accepted"] is None
    assert second["request"] == 1


def test_unknown_timing_line_is_counted_not_raised():
    parsed = parse(LOG.splitlines())
    assert parsed.malformed == 1
    assert parsed.timing_lines == 6
