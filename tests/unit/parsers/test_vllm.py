"""vLLM V1 (0.8.5 and 0.10.2+ layouts) and V0 (0.6.6) log lines (tests/fixtures/vllm_spec_decode.log
cites each version's source file)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep.parsers import vllm

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "vllm_spec_decode.log"


def parsed():
    return vllm.parse(line for line in FIXTURE.read_text().splitlines() if not line.startswith("#"))


def test_speculation_counts_of_every_layout():
    spec = [r for r in parsed().rows if r["line"].startswith("spec")]
    assert [(r["accepted"], r["drafted"]) for r in spec] == [(900, 1800), (1000, 1500), (250, 400), (610, 1000)]
    assert [r["line"] for r in spec] == ["spec_v1", "spec_v1", "spec_v1", "spec_v0"]
    # rates as fractions whatever the layout logged (V1 percent, V0 fraction)
    assert [r["draft_acceptance_rate"] for r in spec] == [0.5, 0.667, 0.625, 0.61]
    assert spec[0]["per_position"] == "0.800, 0.467, 0.233" and spec[3]["emitted"] == 880


def test_prefixes_colours_and_throughput_lines():
    result = parsed()
    rows = result.rows
    assert rows[2]["process"] == "EngineCore_DP0" and rows[2]["time"] == "09-15 10:00:20"  # ANSI stripped
    throughput = [r for r in rows if r["line"] == "throughput"]
    assert [r["gen_throughput"] for r in throughput] == [152.3, 98.7, 75.4]
    assert throughput[0]["engine"] == 0 and throughput[2]["waiting"] == 0  # V0 "Pending"
    assert result.malformed == 1  # the truncated SpecDecoding line


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), max_size=5), st.text() | st.from_regex(r"[\d.:, #a-z]{0,60}\d{4400}", fullmatch=True))
def test_never_raises_on_arbitrary_text(lines, tail):
    result = vllm.parse(
        [*lines, "SpecDecoding metrics:" + tail, "Speculative metrics: " + tail, "Avg prompt throughput:" + tail]
    )
    assert result.matched >= 3 and result.malformed + len(result.rows) == result.matched
