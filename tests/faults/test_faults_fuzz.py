"""Bad data: property-based fuzzing of every parser of engine output (10^4 examples each).

Parsers never raise on malformed input; they count it, and the count reaches the outputs
(profile step log, run records). Inputs mix valid engine lines with arbitrary text so the
generator reaches the parsers' deep branches, not only their first rejection.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from specsweep.engines.base import scan_prometheus
from specsweep.engines.llamacpp import LlamaCpp
from specsweep.engines.openai import LLAMACPP_COUNTERS
from specsweep.measure.client import parse_event
from specsweep.parsers import llamacpp as llamacpp_log

DRAFTS_TOTAL = LLAMACPP_COUNTERS[0]

# 10^4 examples per parser (the issue's floor), kept cheap: generation only (a failure is reported as
# found, without the shrinking that would dominate the time), flat strategies over small alphabets of the
# characters the parsers split on, no example database. The whole file runs in well under a minute.
FUZZ = settings(
    max_examples=10_000,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
    phases=[Phase.explicit, Phase.generate],
)

LOG_LINES = [
    "0.16.113.834 I slot print_timing: id  0 | task 8 | prompt eval time =  95.64 ms /  12 tokens "
    "(    7.97 ms per token,   125.47 tokens per second)",
    "0.16.113.834 I slot print_timing: id  0 | task 8 |        eval time =   14321.77 ms /   500 tokens "
    "(   28.70 ms per token,    34.84 tokens per second)",
    "0.16.113.891 I slot print_timing: id  0 | task 8 | draft acceptance = 0.84397 (  357 accepted /   423 "
    "generated), mean len =  3.53",
    "0.16.113.891 I slot print_timing: id  0 | task 8 |       total time =   14417.41 ms /   512 tokens",
]
NUMBER = (
    st.sampled_from(["0", "12", "1.5", "1.2.3", ".", "-3", "nan", "inf", "1e400", "", "9" * 5000])
    | st.integers().map(str)
    | st.floats().map(str)
)
log_line = st.one_of(
    st.text(alphabet="0123456789.|=/:()_ adeilmnoprstx\t\x00\u00e9", max_size=80),
    st.text(max_size=20),  # anything at all, surrogates and control characters included
    st.sampled_from(LOG_LINES),
    st.builds(
        lambda n, a, b: f"print_timing: id {n} | task {n} | prompt eval time = {a} ms / {b} tokens",
        NUMBER,
        NUMBER,
        NUMBER,
    ),
    st.builds(
        lambda n, a, b: (
            f"print_timing: id {n} | task 1 | draft acceptance = {a} ( {b} accepted / {b} generated), mean len = {a}"
        ),
        NUMBER,
        NUMBER,
        NUMBER,
    ),
    st.builds(lambda line, cut: line[:cut], st.sampled_from(LOG_LINES), st.integers(0, 200)),
)


@FUZZ
@given(st.lists(log_line, max_size=6))
def test_log_parser_never_raises_and_counts_what_it_cannot_read(lines):
    parsed = llamacpp_log.parse(lines)
    assert parsed.lines == len(lines)
    assert 0 <= parsed.malformed <= parsed.matched <= len(lines)
    assert len(parsed.rows) <= parsed.matched


def test_log_parser_counts_a_garbled_number():
    parsed = llamacpp_log.parse(["print_timing: id 0 | task 1 | prompt eval time = 1.2.3 ms / 5 tokens"])
    assert parsed.malformed == 1 and parsed.matched == 1


json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
# One level of nesting is enough to hit every type check (the parsers read known keys, never recurse).
json_value = (
    json_leaf
    | st.lists(json_leaf, max_size=3)
    | st.dictionaries(st.sampled_from(["content", "tokens", "predicted_n", "x", ""]), json_leaf, max_size=3)
)
event = (
    st.fixed_dictionaries(
        {},
        optional={
            "content": json_value,
            "tokens": json_value,
            "stop": json_value,
            "tokens_predicted": json_value,
            "timings": st.fixed_dictionaries(
                {},
                optional={
                    "predicted_n": json_value,
                    "draft_n": json_value,
                    "draft_n_accepted": json_value,
                    "predicted_per_second": json_value,
                },
            )
            | json_value,
        },
    )
    | json_value
)
data_line = st.one_of(
    event.map(lambda e: json.dumps(e).encode()), st.binary(max_size=30), st.text(max_size=30).map(str.encode)
)


@FUZZ
@given(st.lists(data_line, max_size=5))
def test_response_parsing_never_raises(lines):
    engine = LlamaCpp({}, None)  # type: ignore[arg-type]
    events = [e for e in map(parse_event, lines) if e is not None]
    assert all(isinstance(e, dict) for e in events)
    for e in events:
        assert engine.event_tokens(e) >= 0
        assert isinstance(engine.event_text(e), str)
    fields = engine.engine_fields(events)
    tokens = engine.tokens_generated(fields)
    assert tokens is None or isinstance(tokens, int)
    engine.speculation(fields, {DRAFTS_TOTAL: 3.0}, 10)


def test_malformed_events_are_none():
    assert parse_event(b"{not json") is None and parse_event(b"[1, 2]") is None
    assert parse_event(b'{"content": "x"}') == {"content": "x"}


WANTED = (DRAFTS_TOTAL, "llamacpp:spec_decode_num_draft_tokens_total")
metric_line = st.one_of(
    st.text(alphabet='abcdelmprst_:{}=",. 0123456789#\t+-eNIaf', max_size=60),
    st.builds(
        lambda name, labels, value: f"{name}{labels} {value}",
        st.sampled_from(WANTED),
        st.sampled_from(["", '{a="b"}', "{a=b}", "{", '{a="b",}']),
        st.sampled_from(["1", "2.5", "NaN", "+Inf", "x", "", "1 2 3", "1e400"]) | NUMBER,
    ),
    st.sampled_from(["# TYPE llamacpp:spec_decode_num_drafts_total counter", "# HELP x y"]),
)


@FUZZ
@given(st.lists(metric_line, max_size=5))
def test_prometheus_scan_never_raises_and_counts_bad_lines(lines):
    totals, malformed = scan_prometheus("\n".join(lines), WANTED)
    assert set(totals) <= set(WANTED)
    assert 0 <= malformed <= len(lines)


def test_one_bad_metrics_line_does_not_lose_the_others():
    text = f"{DRAFTS_TOTAL} 7\nllamacpp:spec_decode_num_draft_tokens_total{{ 1 2\n"
    assert scan_prometheus(text, WANTED) == ({DRAFTS_TOTAL: 7.0}, 1)
