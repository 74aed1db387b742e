"""summary.csv's repeated verdict with benchmark.sessions {min, max}: the rounds' decision replayed from the sessions
measured, the interval of the look that decided it, the session it stopped at; empty without rounds."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from specsweep.analyse import aggregate, sequential
from specsweep.plan import design
from specsweep.plan.config import Configuration
from specsweep.record.results import Run

ROUNDS = design.SessionRange(2, 4)
WOBBLE = [0.03, -0.03, 0.02, -0.02]
TRUTH = {"base": 0.0, "fast": 0.3, "unclear": 0.03}  # log rates: fast +35 %, unclear +3 % (within ±5 % or not)


def _run(rate: float) -> Run:
    client = {"decode_s": 99 / rate, "decode_tokens_per_s": rate, "ttft_s": 0.05, "itl_median_s": 1 / rate}
    return Run.from_json({"run": 0, "prompt_index": 0, "tokens": 100, "text_sha256": "t", "client": client})


def _summary(measured: dict[str, int], rounds: design.SessionRange | None) -> pd.DataFrame:
    """Each configuration in the given number of its sessions (as the rounds left them), one prompt."""
    base = {n: Configuration(n, "llama", "llamacpp", n == "base", {}, {}, group=n) for n in TRUTH}
    configurations = design.with_sessions(base, ROUNDS.max)
    runs = {
        design.session_name(name, k + 1): [_run(math.exp(TRUTH[name] + WOBBLE[k]))]
        for name, count in measured.items()
        for k in range(count)
    }
    measured = aggregate.Measured(configurations, runs, {}, {})
    return aggregate.summary_table(measured, {}, detect_pct=5.0, session_range=rounds).set_index("configuration")


def test_the_summary_gives_each_comparison_the_verdict_of_the_look_that_stopped_it():
    frame = _summary({"base": 4, "fast": 2, "unclear": 4}, ROUNDS)
    rates = {n: [math.exp(m + w) for w in WOBBLE[:2]] for n, m in TRUTH.items()}
    first_look = sequential.look(rates, "base", ROUNDS, 1, 5.0)["fast"]
    fast = frame.loc["fast"]
    assert fast["sequential_verdict"] == sequential.FASTER and fast["decided_at_session"] == 2
    assert (fast["sequential_ci95_low"], fast["sequential_ci95_high"]) == pytest.approx(
        (first_look.ci_low, first_look.ci_high)
    )
    assert fast["sequential_p_holm"] == pytest.approx(first_look.p_holm)
    unclear = frame.loc["unclear"]
    assert unclear["sequential_verdict"] == sequential.OPEN and pd.isna(unclear["decided_at_session"])
    assert unclear["sequential_ci95_low"] < 1 < unclear["sequential_ci95_high"]
    assert pd.isna(frame.loc["base", "sequential_verdict"])


def test_without_rounds_the_repeated_columns_are_empty():
    frame = _summary({"base": 4, "fast": 4, "unclear": 4}, None)
    columns = ["sequential_verdict", "sequential_p_holm", "sequential_ci95_low", "decided_at_session"]
    assert frame[columns].isna().all().all()
    fixed = _summary({"base": 4, "fast": 4, "unclear": 4}, design.SessionRange(4, 4))
    assert fixed[columns].isna().all().all()
