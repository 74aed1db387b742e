"""Every table: durations in milliseconds, and one name per throughput (decode_tok_s: the client's per-request
decode rate, first token excluded; output_tok_s: a load window's generated tokens per second)."""

from __future__ import annotations

import re

import pytest

from specsweep.analyse import aggregate, drift, effects, loadsummary, runs_table
from specsweep.report import compare

TABLES = {
    "summary.csv": aggregate.COLUMNS,
    "runs.csv": runs_table.RUNS_COLUMNS,
    "load.csv": loadsummary.LOAD_COLUMNS,
    "requests.csv": loadsummary.REQUEST_COLUMNS,
    "categories.csv": loadsummary.CATEGORY_COLUMNS,
    "drift.csv": drift.COLUMNS,
    "effects.csv": effects.COLUMNS,
    "comparison.csv": compare.COLUMNS,
}
THROUGHPUT = re.compile(r"^(engine_)?decode_tok_s(_|$)|^output_tok_s(_|$)")


@pytest.mark.parametrize("table", TABLES)
def test_durations_are_milliseconds_and_throughput_has_one_name(table):
    columns = list(TABLES[table])
    seconds = [c for c in columns if re.search(r"(^|_)s$", c) and not c.endswith("tok_s")]
    assert seconds == [], f"{table}: durations in seconds"
    rates = [c for c in columns if "tok_s" in c or "tokens_per_s" in c]
    assert [c for c in rates if not THROUGHPUT.search(c)] == [], f"{table}: another name for a throughput"


def test_runs_csv_gives_the_records_seconds_as_milliseconds():
    from specsweep.record.results import ClientTimings

    timings = ClientTimings(
        ttft_s=0.125,
        decode_s=2.5,
        e2e_s=2.625,
        decode_tokens_per_s=25.2,
        itl_median_s=0.04,
        itl_p90_s=0.05,
        content_events=64,
    )
    assert runs_table.client_columns(timings) == {
        "ttft_ms": 125.0,
        "decode_ms": 2500.0,
        "e2e_ms": 2625.0,
        "decode_tok_s": 25.2,
        "itl_median_ms": 40.0,
        "itl_p90_ms": 50.0,
        "content_events": 64,
    }
