"""profile.csv as write_profile writes it (fast lines as CSV text, parsers/chunked.py::CsvLines) is byte for
byte what csv.DictWriter writes for the per-line parser's rows, on the fixture and on a generated log with
odd lines (numbers csv writes otherwise than logged, line endings, bytes that are no UTF-8, small chunks),
in one process and with chunks parsed by worker processes."""

from __future__ import annotations

import csv
import io
import random
import sys
from pathlib import Path

import pytest

from specsweep.parsers import chunked, sglang
from specsweep.parsers.fields import whole_lines
from specsweep.parsers.profile import write_profile

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import sglang_log

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "sglang_decode_batch.log"
LINE = (
    "[2026-11-29 07:46:11 DP0 TP0] Decode batch, #running-req: 3, #token: 21843, token usage: 0.34, "
    "accept len: 3.66, accept rate: 0.73, cuda graph: True, gen throughput (token/s): 2513.92, #queue-req: 1"
)
# Each a change to LINE whose numbers csv writes otherwise than logged, or which the fast path must refuse.
ODD = [
    ("0.34", "0.30"),
    ("0.34", "0.00"),
    ("0.34", "0.000"),
    ("0.34", "0.0000"),
    ("0.34", "0.00005"),
    ("0.34", "0.0001"),
    ("0.34", "00.34"),
    ("0.34", "1.0"),
    ("2513.92", "2513.90"),
    ("2513.92", "2500.00"),
    ("2513.92", "12345678.5"),
    ("2513.92", "1234567.12345678"),
    ("2513.92", "1234567.123456789"),
    ("2513.92", "0.123456789012345678"),
    ("21843", "021843"),
    ("21843", "0"),
    ("21843", "9" * 15),
    ("21843", "9" * 16),
    ("21843", "٣"),
    ("DP0", "DP00"),
    ("DP0", "DP10"),
    ("2513.92", "2513.92\x1b[0m"),
    ("#queue-req: 1", "#queue-req: 10"),
    ("Decode batch,", "Decode batch [0012],"),
    ("3.66", "3.6600000"),
]


def reference(path: Path) -> str:
    """What write_profile wrote before CsvLines: DictWriter rows of the per-line parser."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["phase", "source", *sglang.COLUMNS], lineterminator="\n")
    writer.writeheader()
    with open(path, encoding="utf-8", errors="replace") as lines:  # an unterminated last line is no row
        writer.writerows(
            {"phase": "interval", "source": "sglang", **row} for row in sglang.parse(whole_lines(lines, [])).rows
        )
    return out.getvalue()


def written(path: Path, tmp_path: Path, workers: int = 1) -> str:
    output = tmp_path / "profile.csv"
    progress = io.StringIO()
    write_profile(path, output, "sglang", "sglang", {}, 0, progress, "test", workers)
    text = output.read_bytes().decode()
    assert f"{text.count(chr(10)) - 1} sglang rows" in progress.getvalue()  # counts add up across workers
    return text


def generated_log(path: Path, odd: bool) -> None:
    rng = random.Random(7)
    blocks = [sglang_log.request_block(i, rng) for i in range(300)]
    if odd:
        blocks = [
            block + (LINE.replace(*ODD[i % len(ODD)], 1) + "\n" if i % 7 == 0 else "") for i, block in enumerate(blocks)
        ]
    path.write_bytes("".join(blocks).encode() + (b"\r\nDecode batch \xff\r" + LINE.encode() if odd else b""))


def test_the_fixture_writes_what_dictwriter_wrote(tmp_path):
    expected = reference(FIXTURE)
    assert expected.count("\n") == 8 and written(FIXTURE, tmp_path) == expected


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("odd", [False, True])
@pytest.mark.parametrize("chunk_chars", [chunked.CHUNK_CHARS, 5000, 301])
def test_a_generated_log_writes_what_dictwriter_wrote(tmp_path, monkeypatch, odd, chunk_chars, workers):
    monkeypatch.setattr(chunked, "CHUNK_CHARS", chunk_chars)
    path = tmp_path / "server.log"
    generated_log(path, odd)
    expected = reference(path)
    assert expected.count("\n") > 3000 and written(path, tmp_path, workers) == expected


@pytest.mark.parametrize(("old", "new"), ODD)
def test_each_odd_line_alone(tmp_path, old, new):
    path = tmp_path / "server.log"
    path.write_text(f"{LINE}\n{LINE.replace(old, new, 1)}\n{LINE}\n" * 3)
    assert written(path, tmp_path) == reference(path)


def test_a_large_log_says_so_before_parsing(tmp_path, monkeypatch):
    from specsweep.parsers import profile

    path = tmp_path / "server.log"
    generated_log(path, odd=False)
    monkeypatch.setattr(profile, "LARGE_LOG_BYTES", path.stat().st_size)
    progress = io.StringIO()
    write_profile(path, tmp_path / "profile.csv", "sglang", "sglang", {}, 0, progress, "big")
    first, last = progress.getvalue().splitlines()
    assert first == f"big: parsing {path.stat().st_size / 1e6:,.0f} MB of server log" and "sglang rows" in last
