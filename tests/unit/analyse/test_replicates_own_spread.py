"""A configuration whose launch-to-launch spread is larger than the others' gets intervals from its own spread,
not the pooled one that would make them too narrow (issue 36 item 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specsweep.analyse import aggregate, replicates
from specsweep.maths import stats
from specsweep.plan import design
from specsweep.plan.config import Configuration
from specsweep.record.results import Run

QUIET = {"base": [50.0, 50.5, 49.6], "other": [40.0, 40.3, 39.7], "third": [45.0, 44.6, 45.3]}
NOISY = [40.0, 56.0, 70.0]  # cand: a launch-to-launch spread some 40 x the others'


def _run(index: int, rate: float) -> Run:
    client = {"decode_s": 99 / rate, "decode_tokens_per_s": rate, "ttft_s": 0.05, "itl_median_s": 1 / rate}
    return Run.from_json({"run": index, "prompt_index": index, "tokens": 100, "text_sha256": "t", "client": client})


def _summary(rates: dict[str, list[float]]):
    """3 sessions per configuration, one prompt: each session's rate as given."""
    base = {n: Configuration(n, "llama", "llamacpp", n == "base", {}, {}, group=n) for n in rates}
    configurations = design.with_sessions(base, 3)
    sessions = design.sessions_of(configurations)
    runs = {
        name: [_run(0, rates[c.session_of or name][sessions[c.session_of or name].index(name)])]
        for name, c in configurations.items()
    }
    return aggregate.summarise(configurations, runs, {}).set_index("configuration")


def _own(values: list[float]) -> tuple[float, float]:
    logs = np.log(values)
    return float(logs.mean()), float(logs.std(ddof=1))


def test_a_noisy_configuration_s_interval_uses_its_own_spread():
    frame = _summary({**QUIET, "cand": NOISY})
    mean, sd = _own(NOISY)
    half = stats.t_critical(2) * sd / math.sqrt(3)
    assert frame.loc["cand", "decode_tok_s_ci95_low"] == pytest.approx(math.exp(mean - half))
    assert frame.loc["cand", "decode_tok_s_ci95_high"] == pytest.approx(math.exp(mean + half))
    pooled = math.sqrt(np.mean([_own(v)[1] ** 2 for v in [*QUIET.values(), NOISY]]))
    assert sd > pooled  # wider than the pooled interval it had
    assert "own spread" in frame.loc["cand", "warnings"]


def test_a_comparison_with_a_noisy_configuration_is_welch_satterthwaite():
    frame = _summary({**QUIET, "cand": NOISY})
    (mx, sx), (my, sy) = _own(NOISY), _own(QUIET["base"])
    vx, vy = sx**2 / 3, sy**2 / 3
    se, df = math.sqrt(vx + vy), (vx + vy) ** 2 / (vx**2 / 2 + vy**2 / 2)
    half = stats.t_critical(df) * se
    assert frame.loc["cand", "speedup_ci95_low"] == pytest.approx(math.exp(mx - my - half))
    assert frame.loc["cand", "speedup_ci95_high"] == pytest.approx(math.exp(mx - my + half))
    assert frame.loc["cand", "speedup_p_value"] == pytest.approx(2 * stats.t_sf(abs(mx - my) / se, df))


def test_configurations_of_equal_spread_keep_the_pooled_one():
    rates = {**QUIET, "cand": [55.0, 55.4, 54.7]}
    frame = _summary(rates)
    pooled = math.sqrt(np.mean([_own(v)[1] ** 2 for v in rates.values()]))
    mean = _own(rates["cand"])[0]
    half = stats.t_critical(8) * pooled / math.sqrt(3)
    assert frame.loc["cand", "decode_tok_s_ci95_high"] == pytest.approx(math.exp(mean + half))
    assert frame.loc["cand", "ci_df"] == 8
    assert "own spread" not in frame.loc["cand", "warnings"]


def test_the_spread_test_flags_only_the_noisy_configuration():
    sessions = {n: [[_run(0, r)] for r in v] for n, v in {**QUIET, "cand": NOISY}.items()}
    assert replicates.larger_spread(sessions, replicates.pooled(sessions)) == {"cand"}
