"""User-defined regex profile parsers: config checks, rows, and robustness."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep.parsers import llamacpp
from specsweep.parsers.user import UserRows, compile_parsers
from specsweep.plan.config import ConfigError

EAGLE3 = {
    "eagle3_cycle": {
        "pattern": r"EAGLE3_PROFILE cycle=(?P<cycle>\d+) draft_ms=(?P<draft_ms>[\d.]+) verify_ms=(?P<verify_ms>[\d.]+) "
        r"accepted=(?P<accepted>\d+)",
        "units": {"draft_ms": "ms", "verify_ms": "ms"},
        "breakdown": ["draft_ms", "verify_ms"],
        "skip_first": 1,
    }
}


def test_rows_per_matching_line():
    parsers = compile_parsers(EAGLE3)
    rows = UserRows()
    for line in [
        "[TP0] EAGLE3_PROFILE cycle=1 draft_ms=0.70 verify_ms=20.00 accepted=1",
        "unrelated",
        "[TP0] EAGLE3_PROFILE cycle=812 draft_ms=0.61 verify_ms=18.67 accepted=3",
    ]:
        rows.feed(line, parsers)
    assert rows.rows == [
        {
            "phase": "warmup",
            "source": "eagle3_cycle",
            "cycle": 1.0,
            "draft_ms": 0.70,
            "verify_ms": 20.0,
            "accepted": 1.0,
        },
        {
            "phase": "run",
            "source": "eagle3_cycle",
            "cycle": 812.0,
            "draft_ms": 0.61,
            "verify_ms": 18.67,
            "accepted": 3.0,
        },
    ]


def test_user_parsers_read_the_same_lines_as_the_engine_parser():
    # llama.cpp b11434 print_timing line (tools/server/server-context.cpp), as in tests/unit/parsers/test_llamacpp.py
    line = (
        "0.16.113.834 I slot print_timing: id  0 | task 8 |        eval time =   14321.77 ms /   500 tokens "
        "(   28.70 ms per token,    34.84 tokens per second)"
    )
    parsers = compile_parsers({"eval": {"pattern": r"\|\s+eval time =\s*(?P<eval_ms>[\d.]+) ms /\s*(?P<n>\d+) tokens"}})
    rows = UserRows()
    rows.feed(line, parsers)
    assert llamacpp.parse([line]).rows[0]["eval_ms"] == 14321.77
    assert rows.rows[0]["eval_ms"] == 14321.77 and rows.rows[0]["n"] == 500


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"p": {"pattern": "(unclosed"}}, "profile_parsers/p/pattern: not a valid regular expression"),
        ({"p": {"pattern": r"x=(\d+)"}}, "has no named group"),
        (
            {"p": {"pattern": r"x=(?P<x>\d+)", "breakdown": ["y"]}},
            "profile_parsers/p/breakdown: y is not a named group",
        ),
        (
            {"p": {"pattern": r"(?P<a>\d) (?P<b>\d)", "units": {"a": "ms", "b": "s"}, "breakdown": ["a", "b"]}},
            "must share one unit",
        ),
    ],
)
def test_bad_parsers_are_rejected_with_the_key(spec, message):
    with pytest.raises(ConfigError, match=message):
        compile_parsers(spec)


def test_text_values_are_kept_and_counted():
    rows = UserRows()
    rows.feed("mode=fast", compile_parsers({"m": {"pattern": r"mode=(?P<mode>\w+)"}}))
    assert rows.rows[0]["mode"] == "fast" and rows.non_numeric == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(), max_size=10))
def test_never_raises_on_arbitrary_text(lines):
    rows = UserRows()
    for line in lines:
        rows.feed(line, compile_parsers(EAGLE3))
    assert len(rows.rows) == sum(rows.matched.values())
