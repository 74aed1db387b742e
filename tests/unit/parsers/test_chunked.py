"""The chunked file readers (parsers/chunked.py) give exactly what the per-line parsers give: same rows,
same line, matched and malformed counts, on the fixtures and on fuzzed logs (chunk boundaries included);
written as CSV (fast lines as text, CsvLines), the same bytes as csv.DictWriter of those rows."""

from __future__ import annotations

import csv
import io
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specsweep.parsers import chunked, log_formats, sglang, vllm
from specsweep.parsers.fields import whole_lines
from specsweep.parsers.formats import count_cut_line

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SGLANG_LINES = [
    line for line in (FIXTURES / "sglang_decode_batch.log").read_text().splitlines() if "Decode batch" in line
]
VLLM_LINES = (FIXTURES / "vllm_spec_decode.log").read_text().splitlines()


def same(module, path: Path) -> None:
    cut: list[str] = []  # a last line without its newline is never a row (parsers.count_cut_line)
    with open(path, encoding="utf-8", errors="replace") as lines:
        expected = module.parse(whole_lines(lines, cut))
    count_cut_line(expected, cut, module.parse)
    read_file = log_formats()[module.__name__.rsplit(".", 1)[1]].read_file  # what the pipeline calls
    got = read_file(path)
    assert (got.rows, got.lines, got.matched, got.malformed) == (
        expected.rows,
        expected.lines,
        expected.matched,
        expected.malformed,
    )
    streamed: list[dict] = []
    assert read_file(path, sink=streamed.append).emitted == len(streamed) and streamed == expected.rows
    assert as_csv(module, path) == as_csv(module, path, expected.rows)


def as_csv(module, path: Path, rows: list[dict] | None = None) -> str:
    """rows by csv.DictWriter as write_profile writes them; without rows, the file read through CsvLines."""
    name = module.__name__.rsplit(".", 1)[1]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["phase", "source", *module.COLUMNS], lineterminator="\n")
    lead = {"phase": "interval", "source": name}
    if rows is not None:
        writer.writerows({**lead, **row} for row in rows)
    else:
        counted = [0]

        def write(text: str, rows: int) -> None:
            out.write(text)
            counted[0] += rows

        parsed = log_formats()[name].read_file(
            path,
            sink=lambda row: writer.writerow({**lead, **row}),
            csv_lines=chunked.CsvLines(write, lead=f"interval,{name},"),
        )
        assert counted[0] <= parsed.emitted == out.getvalue().count("\n")
    return out.getvalue()


@pytest.mark.parametrize(("module", "name"), [(sglang, "sglang_decode_batch.log"), (vllm, "vllm_spec_decode.log")])
def test_fixtures_read_the_same(module, name):
    same(module, FIXTURES / name)


def test_the_fast_pattern_reads_every_released_layout():
    text = "".join(line + "\n" for line in SGLANG_LINES).encode()
    assert len(sglang.FAST.findall(text)) == 7  # all but the truncated line and the comment


def test_small_chunks_and_odd_endings(monkeypatch, tmp_path):
    monkeypatch.setattr(chunked, "CHUNK_CHARS", 7)
    path = tmp_path / "log"
    path.write_bytes("\r\n".join(SGLANG_LINES * 3).encode() + b"\rtail Decode batch \xff\x1b[0m")
    same(sglang, path)


line = st.one_of(
    st.sampled_from(SGLANG_LINES + VLLM_LINES),
    st.builds(lambda text, cut: text[:cut], st.sampled_from(SGLANG_LINES + VLLM_LINES), st.integers(0, 300)),
    st.builds(
        lambda text, old, new: text.replace(old, new, 1),
        st.sampled_from(SGLANG_LINES),
        st.sampled_from([" ", ", ", ": ", "1", ".", "True", "TP0", "[", "]"]),
        st.sampled_from(["  ", ",", ":", "9" * 20, "1e5", "\x1b[1m", "\r", "", " [7],", "é"]),
    ),
    st.text(alphabet="Decode batch[]0123456789.,: #-\n\r\x1b", max_size=60),
    st.text(max_size=30),
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.lists(line, max_size=12), st.sampled_from(["\n", "\r\n", ""]), st.integers(1, 400))
def test_fuzzed_logs_read_the_same(lines, end, chunk_chars):
    chunked_chars, chunked.CHUNK_CHARS = chunked.CHUNK_CHARS, chunk_chars
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "server.log"
            path.write_bytes(("\n".join(lines) + end).encode("utf-8", errors="surrogatepass"))
            same(sglang, path)
            same(vllm, path)
    finally:
        chunked.CHUNK_CHARS = chunked_chars


@pytest.mark.parametrize("line", [line for line in SGLANG_LINES if sglang.FAST.match(line.encode() + b"\n")])
def test_the_specialised_pattern_reads_each_version_as_the_per_line_parser(line, tmp_path):
    special = sglang.specialise(line.encode() + b"\n")
    assert special is not None and special.pattern.pattern != sglang.FAST.pattern
    found = special.pattern.findall(line.encode() + b"\n")
    assert [special.to_row(groups) for groups in found] == [sglang.parse_line(line)]
    path = tmp_path / "log"  # a file of this layout alone, read through the specialised path
    path.write_text((line + "\nINFO: other\n") * 50 + SGLANG_LINES[-1] + "\n" + line + "\n")
    same(sglang, path)
