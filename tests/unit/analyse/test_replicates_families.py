"""One Holm family per sweep: a factorial sweep's comparisons against several baselines are one question."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from specsweep.analyse import aggregate, conclusion
from specsweep.maths import stats
from specsweep.plan import design
from specsweep.plan.config import Configuration
from specsweep.record.results import Run

# a 2 x 2 design: factor spec (off is the baseline level) crossed with factor threads; each on is compared
# with the off of its own threads level
NAMES = {"off-t1": None, "on-t1": "off-t1", "off-t2": None, "on-t2": "off-t2"}


def _run(index: int, rate: float) -> Run:
    client = {"decode_s": 99 / rate, "decode_tokens_per_s": rate, "ttft_s": 0.05, "itl_median_s": 1 / rate}
    return Run.from_json({"run": index, "prompt_index": index, "tokens": 100, "text_sha256": "t", "client": client})


def _sweep(seed: int = 4) -> tuple[dict[str, Configuration], dict[str, list[Run]]]:
    rng = np.random.default_rng(seed)
    base = {
        name: Configuration(name, "llama", "llamacpp", against is None, {}, {}, group="g", compared_with=against)
        for name, against in NAMES.items()
    }
    configurations = design.with_sessions(base, 3)
    runs = {
        name: [_run(i, float(50 * math.exp(rng.normal(0, 0.03)) * (1.08 if "on" in name else 1))) for i in range(3)]
        for name in configurations
    }
    return configurations, runs


def test_the_family_is_every_comparison_of_the_sweep(tmp_path):
    frame = aggregate.summarise(*_sweep(), {}).set_index("configuration")
    candidates = frame.loc[["on-t1", "on-t2"]]
    assert (candidates["comparisons"] == 2).all()
    assert list(candidates["speedup_p_holm"]) == pytest.approx(stats.holm(list(candidates["speedup_p_value"])))
    lines = aggregate.warning_lines(frame.reset_index())
    assert "Holm-adjusted over the sweep's 2 comparisons" in lines[0]
    aggregate.write_csv(frame.reset_index(), tmp_path / "summary.csv")
    text = "\n".join(conclusion.lines(conclusion.read(tmp_path / "summary.csv")))
    assert "Holm-adjusted p < 0.05 over 2 comparisons" in text


def test_a_single_baseline_family_is_unchanged():
    configurations, runs = _sweep()
    one = {n: c for n, c in configurations.items() if (c.session_of or n) in ("off-t1", "on-t1")}
    frame = aggregate.summarise(one, runs, {}).set_index("configuration")
    assert frame.loc["on-t1", "comparisons"] == 1
    assert frame.loc["on-t1", "speedup_p_holm"] == pytest.approx(frame.loc["on-t1", "speedup_p_value"])
    assert pd.isna(frame.loc["off-t1", "speedup_p_holm"])
