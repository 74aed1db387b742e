"""Profile lines belong to requests by their byte offset in the server log (launch.json log_segments)."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from specsweep.analyse.aggregate import add_profile_columns
from specsweep.measure.evidence import redact_log
from specsweep.measure.hiding import Hidden
from specsweep.parsers.profile import write_profile
from specsweep.record.segments import Segments, segment

PARSERS = {
    "eagle3_cycle": {
        "pattern": r"EAGLE3_PROFILE tp_rank=(?P<tp_rank>\d+) cycle=(?P<cycle>\d+) verify_ms=(?P<verify_ms>[\d.]+)",
        "identifiers": ["cycle", "tp_rank"],
        "keep": {"tp_rank": 0},
        "engines": ["sglang"],
    }
}


def cycles(first: int, count: int, verify_ms: float) -> str:
    """``count`` cycles printed by two tensor-parallel ranks, rank 1 with a different time."""
    return "".join(
        f"EAGLE3_PROFILE tp_rank={rank} cycle={first + c} verify_ms={verify_ms + 100 * rank}\n"
        for c in range(count)
        for rank in (0, 1)
    )


def logged_session(tmp_path):
    """A server log written as a session would, with the offsets the session records: a warmup of 3 cycles
    (a fixed skip_first of 1 or 2 would misplace them), run 0 of 4 cycles, run 1 of 2, late lines."""
    log, segments = tmp_path / "server.log", []
    parts = [
        ("startup", None, "INFO loading weights\nINFO The server is fired up and ready to roll!\n"),
        ("warmup", 0, cycles(1, 3, 50.0)),
        ("run", 0, cycles(4, 4, 10.0) + "INFO request finished\n"),
        ("run", 1, cycles(8, 2, 20.0)),
        ("teardown", None, "INFO shutting down\n"),
    ]
    with open(log, "wb") as handle:
        for phase, index, text in parts:
            if phase != "startup":
                segments.append(segment(phase, index, handle.tell()))
            handle.write(text.encode())
    return log, segments


def test_a_line_belongs_to_the_last_segment_started_at_or_before_it():
    found = Segments.of([segment("run", 1, 200), segment("warmup", 0, 50), segment("run", 0, 100)])
    assert [found.locate(o)[:2] for o in (0, 49, 50, 99, 100, 199, 200, 10**9)] == [
        ("startup", None),
        ("startup", None),
        ("warmup", 0),
        ("warmup", 0),
        ("run", 0),
        ("run", 0),
        ("run", 1),
        ("run", 1),
    ]
    assert Segments.from_launch({"status": "completed"}) is None  # measured before offsets were recorded


def test_profile_rows_get_phase_and_run_from_offsets_and_one_rank(tmp_path):
    log, segments = logged_session(tmp_path)
    out = io.StringIO()
    warnings = write_profile(
        log, tmp_path / "profile.csv", "sglang", "sglang", PARSERS, 1, out, "s1", segments=Segments.of(segments)
    )
    assert warnings == []
    profile = pd.read_csv(tmp_path / "profile.csv")
    rows = profile[profile["source"] == "eagle3_cycle"]
    assert (rows["tp_rank"] == 0).all()  # keep: one rank
    assert list(rows["phase"]) == ["warmup"] * 3 + ["run"] * 6
    assert list(rows.loc[rows["phase"] == "run", "run"]) == [0, 0, 0, 0, 1, 1]
    summary = add_profile_columns(pd.DataFrame({"configuration": ["s1"]}), {"s1": profile}, PARSERS)
    # measures only (cycle and tp_rank are identifiers), over the 6 run rows: (4 x 10 + 2 x 20) / 6
    assert summary.loc[0, "eagle3_cycle_verify_ms_mean"] == (4 * 10.0 + 2 * 20.0) / 6
    assert "eagle3_cycle_cycle_mean" not in summary and "eagle3_cycle_tp_rank_mean" not in summary
    assert summary.loc[0, "eagle3_cycle_rows"] == 6


def test_a_parser_matching_nothing_is_a_warning(tmp_path):
    log, segments = logged_session(tmp_path)
    parsers = {"typo": {"pattern": r"EAGLE_PROFILE cycle=(?P<cycle>\d+)", "engines": ["sglang"]}}
    out = io.StringIO()
    warnings = write_profile(
        log, tmp_path / "profile.csv", "sglang", "sglang", parsers, 1, out, "s1", segments=Segments.of(segments)
    )
    assert warnings == [
        "profile parser typo matched no line of the server log (check its pattern against the log, or its engines list)"
    ]
    assert "s1: WARNING: profile parser typo matched no line" in out.getvalue()


def test_redacting_a_secret_moves_the_recorded_offsets_with_it(tmp_path):
    log, segments = logged_session(tmp_path)
    text = log.read_bytes()
    log.write_bytes(b"argv --api-key sk-long-secret-value-123\n" + text)
    moved = [dict(s, start=s["start"] + len(b"argv --api-key sk-long-secret-value-123\n")) for s in segments]
    redact_log(log, Hidden(declared=[], by_name=["sk-long-secret-value-123"]), moved)
    redacted = log.read_bytes()
    assert b"sk-long-secret" not in redacted
    for entry in moved:  # each segment still starts where its first line starts
        assert redacted[entry["start"] :].startswith(text[[s["start"] for s in segments][moved.index(entry)] :][:20])


@pytest.mark.quiet  # a 20 ms timer against the log's settling time: beside other tests it fires late
def test_a_segment_starts_after_the_previous_requests_trailing_lines(tmp_path):
    """Engines log from their own threads: a line written 20 ms after the response still belongs to it."""
    import threading
    import time

    from specsweep.measure.evidence import log_size

    log = tmp_path / "server.log"
    log.write_bytes(b"request 0 streamed\n")
    late = threading.Timer(0.02, lambda: log.open("ab").write(b"request 0 print_timing (late)\n"))
    late.start()
    started = time.monotonic()
    size = log_size(log)
    late.join()
    assert size == log.stat().st_size  # the late line is before the next segment's start
    assert time.monotonic() - started < 1.5


def timing(slot: int, task: int, tokens: int, drafted: int = 0, accepted: int = 0) -> str:
    """One llama-server b11434 request's print_timing lines (a draft acceptance line only when it drafted)."""
    prefix = f"0.01.000.000 I slot print_timing: id  {slot} | task {task} |"
    lines = f"{prefix}        eval time =     100.00 ms /   {tokens} tokens (    3.12 ms per token,   320.00 tokens per second)\n"
    if drafted:
        lines += f"{prefix} draft acceptance = {accepted / drafted:.5f} (  {accepted} accepted /   {drafted} generated), mean len =  1.50\n"
    return lines


def llamacpp_session_with_load(tmp_path):
    """A llama-server log as a session with load windows writes it: a warmup, three runs that draft nothing,
    then two load windows (levels c1 and c2) whose requests draft, c2's from two slots in flight at once."""
    log, segments = tmp_path / "server.log", []
    parts = [
        ("startup", None, None, "srv  llama_server: model loaded\n"),
        ("warmup", 0, None, timing(0, 0, 8, drafted=4, accepted=1)),
        ("run", 0, None, timing(0, 1, 32)),
        ("run", 1, None, timing(0, 2, 32)),
        ("run", 2, None, timing(0, 3, 32)),
        ("load", None, None, ""),  # after the last run, before the first window
        ("load", 0, "c1", timing(0, 4, 32, drafted=61, accepted=27) + timing(0, 5, 32, drafted=61, accepted=28)),
        ("load", 0, "c2", timing(1, 6, 32, drafted=60, accepted=30) + timing(0, 7, 32, drafted=62, accepted=25)),
        ("teardown", None, None, "srv    operator(): operator(): cleaning up before exit...\n"),
    ]
    with open(log, "wb") as handle:
        for phase, index, level, text in parts:
            if phase != "startup":
                segments.append(segment(phase, index, handle.tell(), level))
            handle.write(text.encode())
    return log, segments


def ngram_profile(log, segments, tmp_path) -> pd.DataFrame:
    """profile.csv of the llama.cpp log of configuration ``ngram``, cut by its ``segments``."""
    write_profile(
        log,
        tmp_path / "profile.csv",
        "llamacpp",
        "llamacpp",
        {},
        1,
        io.StringIO(),
        "ngram",
        segments=Segments.of(segments),
    )
    return pd.read_csv(tmp_path / "profile.csv")


def test_load_window_requests_are_not_runs(tmp_path):
    """The 244/110 double count: load windows' requests were labelled phase run, and the summary's log
    fallback gave three runs that drafted nothing the windows' draft counts."""
    from specsweep.analyse.aggregate import log_speculation

    log, segments = llamacpp_session_with_load(tmp_path)
    profile = ngram_profile(log, segments, tmp_path)
    assert list(profile["phase"]) == ["warmup", "run", "run", "run", "load", "load", "load", "load"]
    assert list(profile["run"].fillna(-1)) == [-1, 0, 1, 2, -1, -1, -1, -1]
    assert list(profile["load_level"].fillna("")) == ["", "", "", "", "c1", "c1", "c2", "c2"]
    assert list(profile["load_window"].fillna(-1)) == [-1, -1, -1, -1, 0, 0, 0, 0]
    assert log_speculation(profile) is None  # the runs drafted nothing: no count from the windows or warmup


def test_run_drafts_from_the_log_count_runs_only(tmp_path):
    from specsweep.analyse.aggregate import log_speculation

    log, segments = llamacpp_session_with_load(tmp_path)
    text = log.read_text().replace(timing(0, 2, 32), timing(0, 2, 32, drafted=10, accepted=7))
    grown = len(timing(0, 2, 32, drafted=10, accepted=7)) - len(timing(0, 2, 32))
    run_1 = next(s["start"] for s in segments if s["phase"] == "run" and s["index"] == 1)
    log.write_text(text)
    moved = [dict(s, start=s["start"] + grown) if s["start"] > run_1 else s for s in segments]
    profile = ngram_profile(log, moved, tmp_path)
    filled = log_speculation(profile)
    assert (filled.drafted, filled.accepted, filled.source) == (10, 7, "server log")
