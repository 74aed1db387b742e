"""A contended session does not widen every interval of the sweep through the pooled spread (issue 36 item 4)."""

from __future__ import annotations

import math

import pytest

from specsweep.analyse import aggregate
from specsweep.plan import design
from specsweep.plan.config import Configuration
from specsweep.record.results import Run

BUSY = {"other_cpu_s": 40.0, "other_cpu_pct": 60.0, "steal_pct": 0.0, "top_other": [], "gpu_other_processes": []}
RATES = {"base": [50.0, 51.0, 49.5], "cand": [55.0, 56.0, 54.4], "other": [40.0, 40.5, 39.8]}


def _run(index: int, rate: float, contended: bool) -> Run:
    client = {"decode_s": 99 / rate, "decode_tokens_per_s": rate, "ttft_s": 0.05, "itl_median_s": 1 / rate}
    telemetry = {"duration_s": 1.0, "t_ms": [0], "gpus": {}, "rapl": {}, "contention": BUSY if contended else None}
    record = {"run": index, "prompt_index": index, "tokens": 100, "text_sha256": "t", "client": client}
    return Run.from_json({**record, "telemetry": telemetry})


def _summary(contended_rate: float | None):
    """3 sessions each, 3 prompts; other's third session measured under contention at ``contended_rate``
    (None: no third session of other)."""
    base = {n: Configuration(n, "llama", "llamacpp", n == "base", {}, {}, group=n) for n in RATES}
    configurations = design.with_sessions(base, 3)
    runs = {}
    for name, c in configurations.items():
        own = c.session_of or name
        k = design.sessions_of(configurations)[own].index(name)
        rate = RATES[own][k]
        busy = own == "other" and k == 2
        if busy and contended_rate is None:
            continue
        runs[name] = [_run(i, (contended_rate if busy else rate) * (1 + 0.01 * i), busy) for i in range(3)]
    return aggregate.summarise(configurations, runs, {}).set_index("configuration")


def test_a_contended_session_is_left_out_of_the_pooled_spread():
    quiet = _summary(None)
    busy = _summary(20.0)  # other's contended session at half speed
    for column in ("decode_tok_s_ci95_low", "decode_tok_s_ci95_high"):
        assert busy.loc["base", column] == pytest.approx(quiet.loc["base", column])
    for column in ("speedup_ci95_low", "speedup_ci95_high", "speedup_p_value"):
        assert busy.loc["cand", column] == pytest.approx(quiet.loc["cand", column])
    assert (
        "other-s3" in busy.loc["other", "warnings"] and "left out of the pooled spread" in busy.loc["other", "warnings"]
    )
    assert not math.isnan(busy.loc["other", "decode_tok_s_ci95_low"])  # still reported, with the quiet spread
