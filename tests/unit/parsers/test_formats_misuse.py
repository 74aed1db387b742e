"""Log formats nobody here wrote (misuse): a last line cut mid-number, two server lifetimes in one log, the
regular b11434 lines, b9093 lines that fail to parse, colour codes, and vLLM's per-interval speculation
counts as the summary's fallback.

llama.cpp lines are filled-in format strings of b11434 tools/server/server-context.cpp (``print_timings``,
``print_timings_tg`` and ``print_timings_pp``, whose ``__func__`` is cut to the 12 characters ``print_timing``
by SLT_INF in server-common.h) and tools/server/server.cpp (``model loaded``), and of b9093's single
``print_timings`` record (see the shared notes, engine-formats.md §3.1)."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pandas as pd
import pytest

from specsweep.analyse.aggregate import log_speculation
from specsweep.parsers import chunked, llamacpp, log_formats, user
from specsweep.parsers.profile import write_profile
from specsweep.parsers.user import LINE_BUDGET_S, ParserTooSlow, UserRows

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SLOT = "I slot print_timing: id  0 | task {task} | "


def b11434_request(task: int, eval_ms: float, at: str = "0.16.113.834 ") -> list[str]:
    prefix = at + SLOT.format(task=task)
    return [
        prefix + "prompt processing, n_tokens =     12, progress = 1.00, t =   0.10 s / 125.47 tokens per second\n",
        prefix + "n_gen =    100, tg =  34.50 t/s, tg_3s =  34.60 t/s\n",
        prefix
        + "prompt eval time =      95.64 ms /    12 tokens (    7.97 ms per token,   125.47 tokens per second)\n",
        prefix
        + f"       eval time = {eval_ms:10.2f} ms /   500 tokens (   28.70 ms per token,    34.84 tokens per second)\n",
        prefix + "      total time =   14417.41 ms /   512 tokens\n",
        prefix + "   graphs reused =        497\n",
        prefix + "draft acceptance = 0.84397 (  357 accepted /   423 generated), mean len =  3.53\n",
    ]


LOADED = "0.00.300.000 I srv  llama_server: model loaded\n"


def test_a_clean_b11434_log_has_no_unrecognised_lines():
    parsed = llamacpp.parse([LOADED, *b11434_request(0, 14321.77), *b11434_request(1, 14000.5)])
    assert parsed.malformed == 0 and len(parsed.rows) == 2
    assert [r["eval_ms"] for r in parsed.rows] == [14321.77, 14000.5]


def test_two_server_lifetimes_in_one_log_are_never_merged():
    # task ids start again at 0 after a restart (an appended log, or an external server restarted)
    parsed = llamacpp.parse([LOADED, *b11434_request(0, 14321.77), LOADED, *b11434_request(0, 9000.0)])
    assert [(r["request"], r["task"], r["eval_ms"]) for r in parsed.rows] == [(0, 0, 14321.77), (1, 0, 9000.0)]


def test_b9093_timing_lines_that_fail_to_parse_are_counted():
    record = [
        "main: model loaded\n",
        "slot print_timing: id  0 | task 0 | \n",
        "prompt eval time =      95.64 ms /    12 tokens (    7.97 ms per token,   125.47 tokens per second)\n",
        "       eval time =   1.2.3 ms /   500 tokens (   28.70 ms per token,    34.84 tokens per second)\n",
        "      total time =   14417.41 ms /   512 tokens\n",
    ]
    parsed = llamacpp.parse(record)
    assert parsed.malformed == 1 and parsed.rows[0]["prompt_ms"] == 95.64 and parsed.rows[0]["eval_ms"] is None


def test_colour_codes_inside_a_llamacpp_line_are_stripped():
    coloured = [
        line.replace("eval time =", "eval time = \x1b[32m", 1).replace(" ms", "\x1b[0m ms", 1)
        for line in b11434_request(3, 14321.77)
    ]
    parsed = llamacpp.parse(coloured)
    assert parsed.malformed == 0 and parsed.rows[0]["eval_ms"] == 14321.77


def _read(tmp_path: Path, name: str, text: str):
    path = tmp_path / "server.log"
    path.write_text(text)
    return log_formats()[name].read_file(path)


def test_a_last_line_cut_inside_a_number_is_malformed_not_a_row(tmp_path):
    whole = "".join([LOADED, *b11434_request(0, 14321.77)])
    cut = whole[: whole.index("14321.77") + 4]  # "... eval time =   1432" (a log still being written)
    parsed = _read(tmp_path, "llamacpp", cut)
    assert parsed.rows[0]["eval_ms"] is None and parsed.malformed == 1

    sglang_line = next(
        line
        for line in (FIXTURES / "sglang_decode_batch.log").read_text().splitlines()
        if "gen throughput (token/s): 210.55" in line
    )
    parsed = _read(tmp_path, "sglang", sglang_line + "\n" + sglang_line[: sglang_line.index("210.55") + 2])
    assert [r["gen_throughput"] for r in parsed.rows] == [210.55] and parsed.malformed == 1 and parsed.lines == 2

    vllm_line = next(
        line for line in (FIXTURES / "vllm_spec_decode.log").read_text().splitlines() if "Drafted: 1800 tokens" in line
    )
    parsed = _read(tmp_path, "vllm", vllm_line[: vllm_line.index("Drafted: 1800") + 11])
    assert parsed.rows == [] and parsed.malformed == 1


def test_vllm_interval_rows_are_the_summary_fallback_for_speculation_counts(tmp_path):
    rows = log_formats()["vllm"].read_file(FIXTURES / "vllm_spec_decode.log").rows
    profile = pd.DataFrame([{"phase": "interval", "source": "vllm", **row} for row in rows])
    v1 = profile[profile["line"].isin(["spec_v1", "throughput"])]
    filled = log_speculation(v1)
    # V1 lines count their own interval: 1800 + 1500 + 400 drafted, 900 + 1000 + 250 accepted
    assert (filled.drafted, filled.accepted) == (3700, 2150)
    assert filled.source == "server log (logging intervals, warmup included)"
    v0 = profile[profile["line"] == "spec_v0"]
    filled = log_speculation(v0)
    assert (filled.drafted, filled.accepted) == (1000, 610)  # V0 counts since start: the last line


def _sglang_log(path: Path, copies: int) -> None:
    line = next(
        line
        for line in (FIXTURES / "sglang_decode_batch.log").read_text().splitlines()
        if "gen throughput (token/s): 210.55" in line
    )
    path.write_text(
        "".join(f"{line}\nEAGLE3_PROFILE cycle={i} draft_ms=0.61 verify_ms=18.67 accepted=3\n" for i in range(copies))
    )


EAGLE3 = {"eagle3": {"pattern": r"EAGLE3_PROFILE cycle=(?P<cycle>\d+) draft_ms=(?P<draft_ms>[\d.]+)"}}


def test_user_parsers_stream_and_keep_the_chunked_reader(tmp_path, monkeypatch):
    log, out = tmp_path / "server.log", tmp_path / "profile.csv"
    _sglang_log(log, 2000)
    calls = []
    read_chunk = chunked.read_chunk
    monkeypatch.setattr(chunked, "read_chunk", lambda *a: calls.append(1) or read_chunk(*a))
    held = []
    original = UserRows.__init__

    def watched(self, *args, **kwargs):
        original(self, *args, **kwargs)
        held.append(self)

    monkeypatch.setattr(UserRows, "__init__", watched)
    write_profile(log, out, "sglang", "sglang", EAGLE3, 0, io.StringIO(), "cfg")
    profile = pd.read_csv(out)
    assert calls, "the chunked reader was switched off by a user parser"
    assert (profile["source"] == "eagle3").sum() == 2000 and (profile["source"] == "sglang").sum() == 2000
    assert held and all(rows.rows == [] for rows in held)  # every user row went straight to the CSV


def test_a_catastrophic_user_pattern_fails_in_seconds_naming_the_parser(tmp_path):
    log, out = tmp_path / "server.log", tmp_path / "profile.csv"
    log.write_text("ok line\n" + "a" * 60 + "!\n")
    started = time.monotonic()
    with pytest.raises(ParserTooSlow) as error:
        write_profile(log, out, "sglang", "sglang", {"nested": {"pattern": r"(?P<x>(a+)+)$"}}, 0, io.StringIO(), "cfg")
    assert time.monotonic() - started < LINE_BUDGET_S + 5
    assert f"profile_parsers/nested: its pattern spent more than {LINE_BUDGET_S:.0f} s on line 2 of {log}" in str(
        error.value
    )


def test_a_long_user_pass_says_how_far_it_got(tmp_path, monkeypatch):
    monkeypatch.setattr(user, "PROGRESS_EVERY_S", 0.0)
    log, progress = tmp_path / "server.log", io.StringIO()
    _sglang_log(log, 20000)
    write_profile(log, tmp_path / "profile.csv", "sglang", "sglang", EAGLE3, 0, progress, "cfg")
    assert "cfg: profile parsers: 16,384 lines read in" in progress.getvalue()
