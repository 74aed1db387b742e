"""SGLang Decode batch lines of 0.4.3.post2 to 0.5.23 (tests/fixtures/sglang_decode_batch.log cites
each version's source file)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep.parsers import sglang

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "sglang_decode_batch.log"


def fixture_lines() -> list[str]:
    return [line for line in FIXTURE.read_text().splitlines() if not line.startswith("#")]


def test_every_version_reads_the_same_fields():
    parsed = sglang.parse(fixture_lines())
    rows = parsed.rows
    assert len(rows) == 7 and parsed.matched == 8 and parsed.malformed == 1  # the truncated line
    assert [r["gen_throughput"] for r in rows] == [31.10, 210.55, 187.34, 2150.02, 1987.50, 1990.25, 2301.77]
    assert [r["accept_len"] for r in rows] == [None, 3.20, 2.85, 2.95, 3.15, 3.05, 3.40]
    assert [r["accept_rate"] for r in rows] == [None, None, None, 0.49, 0.79, 0.76, 0.80]
    assert [r["tokens"] for r in rows] == [1536, 1576, 2048, 2311, 1900, 1940, 2100]


def test_prefix_ranks_iteration_and_graph_backend():
    rows = sglang.parse(fixture_lines()).rows
    assert (rows[2]["dp_rank"], rows[2]["tp_rank"], rows[2]["running_req"], rows[2]["queue_req"]) == (1, 3, 2, 1)
    assert rows[3]["iter"] == 1280 and rows[5]["iter"] == 4242 and rows[4]["iter"] is None
    assert rows[4]["time"] == "2025-11-29 07:46:11.123" and rows[4]["graph"] == "False"
    assert rows[0]["graph"] is None  # 0.4.3 did not log it


def test_hybrid_swa_token_fields():
    # 0.4.10.post2 scheduler_metrics_mixin.py: hybrid SWA models log "#full token"/"full token usage".
    line = (
        "[2025-08-01 12:00:00 TP0] Decode batch. #running-req: 1, #full token: 10, full token usage: 0.10, "
        "#swa token: 5, swa token usage: 0.05, cuda graph: True, gen throughput (token/s): 9.00, #queue-req: 0, "
    )
    row = sglang.parse([line]).rows[0]
    assert (row["tokens"], row["token_usage"], row["gen_throughput"]) == (10, 0.10, 9.0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), max_size=5), st.text() | st.from_regex(r"[\d.:, #a-z]{0,60}\d{4400}", fullmatch=True))
def test_never_raises_on_arbitrary_text(lines, tail):
    parsed = sglang.parse([*lines, "Decode batch" + tail, "[x] Decode batch [" + tail])
    assert parsed.matched >= 2 and parsed.malformed + len(parsed.rows) == parsed.matched
