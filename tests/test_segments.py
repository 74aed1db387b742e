"""Profile lines belong to requests by their byte offset in the server log (launch.json log_segments)."""

from __future__ import annotations

import io

import pandas as pd

from specsweep.analyse.aggregate import add_profile_columns
from specsweep.measure.session import _redact_log
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
    assert [found.locate(o) for o in (0, 49, 50, 99, 100, 199, 200, 10**9)] == [
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
    _redact_log(log, ["sk-long-secret-value-123"], moved)
    redacted = log.read_bytes()
    assert b"sk-long-secret" not in redacted
    for entry in moved:  # each segment still starts where its first line starts
        assert redacted[entry["start"] :].startswith(text[[s["start"] for s in segments][moved.index(entry)] :][:20])


def test_a_segment_starts_after_the_previous_requests_trailing_lines(tmp_path):
    """Engines log from their own threads: a line written 20 ms after the response still belongs to it."""
    import threading
    import time

    from specsweep.measure.session import _log_size

    log = tmp_path / "server.log"
    log.write_bytes(b"request 0 streamed\n")
    late = threading.Timer(0.02, lambda: log.open("ab").write(b"request 0 print_timing (late)\n"))
    late.start()
    started = time.monotonic()
    size = _log_size(log)
    late.join()
    assert size == log.stat().st_size  # the late line is before the next segment's start
    assert time.monotonic() - started < 1.5
