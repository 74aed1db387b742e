"""The cost model recovers known costs from synthetic sweeps, including one shaped like the seed's."""

from __future__ import annotations

import numpy as np
import pytest
from run_records import runs_of

from specsweep.analyse import costmodel
from specsweep.plan.config import Configuration

# The seed's measurement: a verify pass took 18.67 ms at 3 draft tokens and 21.7 ms at 6.
SEED_A, SEED_B = costmodel.verify_line(3, 0.01867, 6, 0.0217)


def _configuration(name, group, baseline=False, k=None, draft_model=None):
    axes = {"--draft-n": k} if k is not None else {}
    return Configuration(
        name=name,
        engine="e",
        kind="llamacpp",
        baseline=baseline,
        args=dict(axes),
        env={},
        axes=axes,
        group=group,
        draft_model=draft_model,
    )


def _synthetic_sweep(a, b, c, alpha, lengths, draft_lengths=(), runs=5, noise=0.03, seed=0):
    """Runs whose decode time is exactly the model plus multiplicative noise; counts from alpha."""
    rng = np.random.default_rng(seed)
    tokens = 500
    configurations = {"baseline": _configuration("baseline", "baseline", baseline=True)}
    records = {"baseline": []}
    for _ in range(runs):
        decode_s = (tokens - 1) * (a + b) * rng.normal(1, noise)
        records["baseline"].append({"tokens": tokens, "client": {"decode_s": decode_s}, "speculation": None})
    for k, draft_model in [(k, False) for k in lengths] + [(k, True) for k in draft_lengths]:
        name = f"{'draft' if draft_model else 'spec'}-k{k}"
        configurations[name] = _configuration(
            name, "draft" if draft_model else "spec", k=k, draft_model="d" if draft_model else None
        )
        per_cycle = float(costmodel.accept_length(k, alpha))
        steps = round((tokens - 1) / per_cycle)
        accepted = tokens - 1 - steps
        drafted = steps * k
        exact = a * steps + b * (steps + drafted) + (c * drafted if draft_model else 0.0)
        records[name] = [
            {
                "tokens": tokens,
                "client": {"decode_s": exact * rng.normal(1, noise)},
                "speculation": {"drafted": drafted, "accepted": accepted, "verify_steps": steps},
            }
            for _ in range(runs)
        ]
    return configurations, runs_of(records)


def test_seed_numbers_mean_the_fixed_part_dominates():
    a, b = costmodel.verify_line(3, 0.01867, 6, 0.0217)
    assert (a, b) == pytest.approx((0.01463, 0.00101))
    assert costmodel.fixed_share(SEED_A, SEED_B, 3) == pytest.approx(0.7836, abs=1e-3)
    assert "fixed per-pass cost dominates" in costmodel.conclude(SEED_A, SEED_B, 3)


def test_fit_recovers_the_seed_shaped_costs_and_conclusion():
    configurations, runs = _synthetic_sweep(SEED_A, SEED_B, 0.0, alpha=0.8, lengths=[1, 2, 3, 4, 6, 8])
    model = costmodel.fit(configurations, runs)
    a, b = model.parameter("a"), model.parameter("b")
    assert a.ci_low <= SEED_A <= a.ci_high and a.ci_high - a.ci_low < SEED_A
    assert b.ci_low <= SEED_B <= b.ci_high
    assert "fixed per-pass cost dominates" in model.conclusion
    group = model.groups[0]
    assert group.alpha == pytest.approx(0.8, abs=0.02)
    # Cheap verification with 80 % acceptance: the optimum is a long-ish draft, measured or suggested.
    true_curve = costmodel.tok_s(group.curve_k, SEED_A, SEED_B, 0.0, 0.8, 0.0)
    assert group.optimum_k == pytest.approx(group.curve_k[np.argmax(true_curve)], abs=1.5)
    assert np.all(model.table["error_pct"].abs() < 5)


def test_a_costly_draft_model_makes_speculation_not_pay():
    configurations, runs = _synthetic_sweep(0.006, 0.004, 0.020, alpha=0.95, lengths=[2, 4, 8], draft_lengths=[1, 3, 5])
    model = costmodel.fit(configurations, runs)
    assert model.parameter("c").ci_low <= 0.020 <= model.parameter("c").ci_high
    assert "per-token cost dominates" in model.conclusion
    groups = {g.name: g for g in model.groups}
    assert groups["draft"].next_configuration.startswith("none")
    assert groups["spec"].optimum_k > 2


def test_suggests_an_unmeasured_draft_length():
    configurations, runs = _synthetic_sweep(SEED_A, SEED_B, 0.0, alpha=0.8, lengths=[1, 2], noise=0.01)
    group = costmodel.fit(configurations, runs).groups[0]
    assert group.optimum_k > 4
    assert group.next_configuration.startswith("--draft-n = ")
    suggested = int(group.next_configuration.split("=")[1].split()[0])
    assert suggested == pytest.approx(group.optimum_k, abs=1)


def test_needs_more_than_one_draft_length():
    configurations, runs = _synthetic_sweep(SEED_A, SEED_B, 0.0, alpha=0.8, lengths=[])
    with pytest.raises(ValueError, match="not identifiable"):
        costmodel.fit(configurations, runs)


def test_no_conclusion_when_an_interval_includes_zero():
    text = costmodel.conclude(0.0077, 0.0064, 8, a_ci=(-0.013, 0.029), b_ci=(-0.002, 0.015))
    assert text.startswith("this sweep cannot separate")
    assert "fixed per-pass cost dominates" in costmodel.conclude(SEED_A, SEED_B, 3, (0.012, 0.017), (0.0008, 0.0012))
