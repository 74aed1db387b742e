"""benchmark.sessions: 1 with several passes: the intervals are within one launch, so nothing is declared."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specsweep.analyse import aggregate, conclusion
from specsweep.plan.config import Configuration
from specsweep.record.results import Run

PROMPTS, PASSES = 4, 3


def _run(index: int, rate: float) -> Run:
    seconds = 99 / rate
    client = {"decode_s": seconds, "decode_tokens_per_s": rate, "ttft_s": 0.05, "itl_median_s": 1 / rate}
    return Run.from_json(
        {"run": index, "prompt_index": index % PROMPTS, "tokens": 100, "text_sha256": "t", "client": client}
    )


def _aa_sweep(seed: int) -> tuple[dict[str, Configuration], dict[str, list[Run]]]:
    """Identical configurations, one launch each (a 10 % launch offset), several passes per launch."""
    rng = np.random.default_rng(seed)
    names = ["base", "a", "b", "c"]
    configurations = {n: Configuration(n, "llama", "llamacpp", n == "base", {}, {}, group=n) for n in names}
    runs = {}
    for name in names:
        launch = math.exp(rng.normal(0, 0.10))
        rates = 50.0 * launch * np.exp(rng.normal(0, 0.01, PROMPTS * PASSES))
        runs[name] = [_run(i, float(r)) for i, r in enumerate(rates)]
    return configurations, runs


def test_one_session_declares_no_difference_between_identical_configurations():
    frame = aggregate.summarise(*_aa_sweep(3), {}).set_index("configuration")
    assert (frame["interval_unit"] == "pass").all()
    assert frame["significant"].isna().all()
    assert frame["speedup_p_holm"].isna().all()
    assert not math.isnan(frame.loc["a", "speedup_ci95_low"])  # the within-launch interval is still given


@pytest.mark.parametrize("seed", range(4))
def test_the_conclusion_says_why_nothing_is_declared(tmp_path, seed):
    """Not in the differences, nor in the best line's verdict (a candidate is fastest in some of these seeds)."""
    path = tmp_path / "summary.csv"
    aggregate.write_csv(aggregate.summarise(*_aa_sweep(seed), {}), path)
    text = "\n".join(conclusion.lines(conclusion.read(path)))
    assert "launch-to-launch variation not measured; nothing declared (benchmark.sessions >= 2)" in text
    assert "significant" not in text
