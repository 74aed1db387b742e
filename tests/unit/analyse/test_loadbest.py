"""The setting per load level (issue 33 item 4): the best, the ones equivalent to it, or not resolved."""

from __future__ import annotations

import numpy as np
import pandas as pd

from specsweep.analyse import loadbest


def _sessions(rate: float, sd: float, seed: int, sessions: int = 4) -> dict[tuple[int, int], float]:
    # a shared launch effect per session (as paired sessions have) plus the configuration's own noise
    launch = np.random.default_rng(0).normal(0, 0.05, sessions)
    own = np.random.default_rng(seed).normal(0, sd, sessions)
    return {(k, 0): rate * float(np.exp(launch[k] + own[k])) for k in range(sessions)}


def test_a_best_its_equivalents_and_the_slower_ones():
    rates = {"base": _sessions(80, 0.002, 1), "a": _sessions(100, 0.002, 2), "b": _sessions(99.5, 0.002, 3)}
    assert loadbest.level_verdicts(rates, 3.0) == {"a": "best", "b": "equivalent", "base": "slower"}


def test_not_significant_is_not_equivalent():
    """Candidates that no interval separates, but whose intervals reach beyond the tolerance, are not resolved."""
    rates = {"base": _sessions(80, 0.002, 1), "a": _sessions(100, 0.05, 2), "b": _sessions(99, 0.05, 3)}
    assert loadbest.level_verdicts(rates, 3.0) == {"a": "not resolved", "b": "not resolved", "base": "slower"}


def test_a_wider_tolerance_resolves_it():
    rates = {"base": _sessions(80, 0.002, 1), "a": _sessions(100, 0.01, 2), "b": _sessions(99, 0.01, 3)}
    assert loadbest.level_verdicts(rates, 1.0)["a"] == "not resolved"
    assert loadbest.level_verdicts(rates, 10.0) == {"a": "best", "b": "equivalent", "base": "slower"}


def test_windows_of_one_launch_judge_nothing_and_the_lines_say_each_level():
    rates = {
        "c1": {"base": _sessions(80, 0.002, 1), "a": _sessions(100, 0.002, 2)},
        "c4": {"base": _sessions(80, 0.002, 1), "a": _sessions(100, 0.05, 2)},
        "c8": {"base": _sessions(80, 0.002, 1), "a": _sessions(60, 0.002, 2)},
    }
    frame = pd.DataFrame(
        [
            {
                "configuration": name,
                "load": label,
                "replicate": "session" if label != "c4" else "window (within-launch)",
            }
            for label in rates
            for name in ("base", "a")
        ]
    )
    table = loadbest.with_verdicts(frame, rates, 3.0)
    judged = ["slower", "best", "not judged (one launch)", "not judged (one launch)", "best", "slower"]
    assert list(table["level_verdict"]) == judged
    assert loadbest.lines(table.to_dict("records")) == [
        "c1: best a",
        "c4: not judged (one launch: benchmark.sessions >= 2)",
        "c8: best base",
    ]


def test_the_conclusion_reads_load_csv(tmp_path):
    rates = {"c2": {"base": _sessions(80, 0.002, 1), "a": _sessions(100, 0.002, 2), "b": _sessions(99.5, 0.002, 3)}}
    frame = pd.DataFrame([{"configuration": n, "load": "c2", "replicate": "session"} for n in ("base", "a", "b")])
    loadbest.with_verdicts(frame, rates, 3.0).to_csv(tmp_path / "load.csv", index=False)
    assert loadbest.conclusion_lines(tmp_path / "load.csv") == [
        "  setting per load level: c2: best a (equivalent within ±3 %: b)"
    ]
