"""A load window says how far it is while it runs (stand-in engine): one of 109 s was silent until it ended."""

from __future__ import annotations

import re

from conftest import leftovers, run_session, session_spec

from specsweep.record import ongoing


def test_a_long_load_window_says_how_many_requests_ended_while_it_runs(tmp_path, standin, model_file, monkeypatch):
    monkeypatch.setattr(ongoing, "PLAIN_EVERY_S", 0.3)
    # 16 tokens of 20 ms: each request ~0.3 s, the window of 6 at concurrency 1 ~2 s
    load = {"concurrency": [1], "requests_per_window": 6, "windows": 1, "seed": 1, "slo": {}, "warmup": False}
    spec = session_spec(tmp_path, standin, model_file, env={"STANDIN_MODE": "token-delay=0.02"}, runs=1, load=load)
    spec["windows"] = {"c1": 1}
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    during = re.findall(r"^cfg: load c1 window 1/1: (\d) of 6 requests ended, \d s so far$", progress, flags=re.M)
    assert len(during) >= 3, progress  # every 0.3 s of the ~2 s window
    assert during == sorted(during) and int(during[-1]) >= 3  # the count moves
    result = re.search(r"^cfg: load c1 window 1/1: .*, 6 requests in", progress, flags=re.M)
    assert result and progress.index("requests ended") < result.start()  # said while it ran, then its result
    assert leftovers(standin) == []
