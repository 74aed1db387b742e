"""A cost model of speculative decoding, fitted from what the engine's counters allow.

Model (one engine, one machine)::

    cycle_time(k) = a + b * (1 + k) + c * k        a: fixed cost of one target forward pass
                                                   b: cost per token the target verifies
                                                   c: cost per token a draft *model* drafts (0 for n-gram)
    accept_length(k) = 1 + alpha * (1 - alpha**k) / (1 - alpha)   (geometric acceptance, per group)
    tok/s(k) = 1 / (u * (a + b) + (1 - u) * cycle_time(k) / accept_length(k))

where k is the number of draft tokens per verify step and u the fraction of tokens that no draft
covered (decoded one at a time, like the baseline).

What is fitted from what: llama.cpp has no per-cycle draft/verify timer (only wall time and the
/metrics counters), so ``a, b, c`` are fitted by weighted least squares of each configuration's mean
decode time on its *counts*: target forward passes (plain steps + verify steps), tokens the target
processed (passes + drafted tokens) and tokens a draft model drafted. One point per configuration,
not per run, because launch-to-launch drift (±10 % on a shared machine) is shared by a session's
runs; the parameter intervals (95 % Student t on the residual scatter between configurations) are
therefore honest but wide. ``alpha`` is fitted per configuration group from (draft tokens, accepted
tokens) per verify step. Where an engine provides per-cycle timings (a profile parser), they can be
fed in as points of ``cycle_time`` directly (``fit_cycle_time``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize

from specsweep.maths.stats import CONFIDENCE, t_critical
from specsweep.measure.rate_check import kept_and_excluded
from specsweep.plan import design
from specsweep.plan.config import Configuration
from specsweep.record.results import Run
from specsweep.record.speculation import SpeculationCounts

DRAFT_MODEL_FLAGS = ("-md", "--model-draft", "--spec-draft-model")
CURVE_SEED = 20_261_129


class NotIdentifiable(ValueError):
    """The sweep does not vary what the model needs (tokens verified per pass)."""


@dataclass(frozen=True)
class Parameter:
    name: str
    value: float
    ci_low: float
    ci_high: float
    meaning: str


@dataclass(frozen=True)
class Counts:
    """One configuration's mean counts per run (what the model is fitted on)."""

    configuration: str
    group: str
    draft_model: bool
    decoded: float  # tokens after the first (the client's decode window)
    decode_s: float
    verify_steps: float
    drafted: float
    accepted: float

    @property
    def plain_steps(self) -> float:
        return max(self.decoded - self.verify_steps - self.accepted, 0.0)

    @property
    def passes(self) -> float:
        return self.plain_steps + self.verify_steps

    @property
    def target_tokens(self) -> float:
        return self.passes + self.drafted

    @property
    def draft_per_cycle(self) -> float:
        return self.drafted / self.verify_steps if self.verify_steps else 0.0

    @property
    def accepted_per_cycle(self) -> float:
        return self.accepted / self.verify_steps if self.verify_steps else 0.0

    @property
    def uncovered(self) -> float:
        return self.plain_steps / self.decoded if self.decoded else 1.0

    def design(self, with_draft: bool) -> list[float]:
        """The regressors of decode time: passes, tokens the target verified, draft-model tokens."""
        return [self.passes, self.target_tokens] + ([self.drafted if self.draft_model else 0.0] if with_draft else [])


@dataclass
class Group:
    name: str
    draft_model: bool
    alpha: float
    uncovered: float
    axis: str | None
    points: list[tuple[Any, float]]  # (swept parameter value, draft tokens per cycle)
    optimum_k: float = math.nan
    optimum_tok_s: float = math.nan
    next_configuration: str = ""
    curve_k: np.ndarray = field(default_factory=lambda: np.zeros(0))
    curve: np.ndarray = field(default_factory=lambda: np.zeros(0))
    curve_low: np.ndarray = field(default_factory=lambda: np.zeros(0))
    curve_high: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass
class CostModel:
    parameters: list[Parameter]
    table: pd.DataFrame
    groups: list[Group]
    baseline_tok_s: float
    conclusion: str
    degrees_of_freedom: int

    def parameter(self, name: str) -> Parameter:
        return next(p for p in self.parameters if p.name == name)


def uses_draft_model(configuration: Configuration) -> bool:
    return bool(configuration.draft_model) or any(configuration.args.get(f) for f in DRAFT_MODEL_FLAGS)


NO_SPECULATION = SpeculationCounts(drafted=0, accepted=0, emitted=None)


def counts_of(configuration: Configuration, runs: Sequence[Run]) -> Counts | None:
    """Mean counts per run; None without runs, or when the engine did not report how many tokens it drafted
    (the fit would read that as drafting nothing)."""
    spec = [r.speculation or NO_SPECULATION for r in runs]
    if not runs or any(s.verify_steps and s.drafted is None for s in spec):
        return None
    return Counts(
        configuration=configuration.name,
        group=configuration.group,
        draft_model=uses_draft_model(configuration),
        decoded=float(np.mean([r.tokens - 1 for r in runs])),
        decode_s=float(np.mean([r.client.decode_s for r in runs])),
        verify_steps=float(np.mean([s.verify_steps or 0 for s in spec])),
        drafted=float(np.mean([s.drafted or 0 for s in spec])),
        accepted=float(np.mean([s.accepted or 0 for s in spec])),
    )


def fit_cycle_time(counts: Sequence[Counts]) -> tuple[list[Parameter], int, np.ndarray]:
    """Weighted least squares of decode time on (passes, target tokens, draft-model tokens).

    Weights make the residuals relative (each row divided by its decode time), so a slow
    configuration does not dominate. Returns the parameters (seconds), the residual degrees of
    freedom and the parameter covariance.
    """
    with_draft = any(c.draft_model and c.drafted for c in counts)
    x = np.asarray([c.design(with_draft) for c in counts], dtype=float)
    y = np.asarray([c.decode_s for c in counts], dtype=float)
    xw, yw = x / y[:, None], np.ones_like(y)
    theta, _, rank, _ = np.linalg.lstsq(xw, yw, rcond=None)
    dof = len(y) - x.shape[1]
    if rank < x.shape[1]:
        raise NotIdentifiable(
            "the cost model is not identifiable: the configurations need different draft lengths "
            "(tokens verified per pass) besides the baseline"
        )
    if dof > 0:
        residual = yw - xw @ theta
        covariance = float(residual @ residual / dof) * np.linalg.inv(xw.T @ xw)
        half = t_critical(dof) * np.sqrt(np.diag(covariance))
    else:
        covariance = np.full((x.shape[1], x.shape[1]), np.nan)
        half = np.full(x.shape[1], np.nan)
    meanings = [
        "fixed cost of one target forward pass",
        "target cost per verified token",
        "draft-model cost per drafted token",
    ]
    names = ["a", "b", "c"]
    parameters = [
        Parameter(names[i], float(theta[i]), float(theta[i] - half[i]), float(theta[i] + half[i]), meanings[i])
        for i in range(x.shape[1])
    ]
    if not with_draft:
        parameters.append(Parameter("c", 0.0, math.nan, math.nan, meanings[2] + "; no draft-model configuration"))
    return parameters, dof, covariance


def accept_length(k: np.ndarray | float, alpha: float) -> np.ndarray:
    """Expected tokens per cycle, bonus included, when each draft token is accepted with prob. alpha."""
    k = np.asarray(k, dtype=float)
    if alpha >= 1.0:
        return 1.0 + k
    return 1.0 + alpha * (1.0 - alpha**k) / (1.0 - alpha)


def fit_alpha(points: Sequence[tuple[float, float]]) -> float:
    """Per-token acceptance probability from (draft tokens, accepted tokens) per cycle."""
    points = [(k, acc) for k, acc in points if k > 0]
    if not points:
        return math.nan

    def loss(alpha: float) -> float:
        return sum((accept_length(k, alpha) - 1.0 - acc) ** 2 for k, acc in points)

    return float(optimize.minimize_scalar(loss, bounds=(1e-6, 1.0 - 1e-9), method="bounded").x)


def cycle_time(k: np.ndarray | float, a: float, b: float, c: float) -> np.ndarray:
    k = np.asarray(k, dtype=float)
    return a + b * (1.0 + k) + c * k


def tok_s(k: np.ndarray | float, a: float, b: float, c: float, alpha: float, uncovered: float) -> np.ndarray:
    per_token = uncovered * (a + b) + (1.0 - uncovered) * cycle_time(k, a, b, c) / accept_length(k, alpha)
    return 1.0 / per_token


def fixed_share(a: float, b: float, k: float) -> float:
    """Share of one verify pass that does not depend on how many tokens it verifies."""
    return a / (a + b * (1.0 + k))


def verify_line(k1: float, t1: float, k2: float, t2: float) -> tuple[float, float]:
    """a, b of verify = a + b * (1 + k) through two measured verify times at draft lengths k1, k2."""
    b = (t2 - t1) / (k2 - k1)
    return t1 - b * (1.0 + k1), b


def conclude(
    a: float,
    b: float,
    k: float,
    a_ci: tuple[float, float] = (math.nan, math.nan),
    b_ci: tuple[float, float] = (math.nan, math.nan),
) -> str:
    """Which part of a verify pass dominates at ``k`` draft tokens, only where the intervals say so."""
    share = fixed_share(a, b, k)
    if a <= 0 or b <= 0 or any(low <= 0 for low, _ in (a_ci, b_ci) if not math.isnan(low)):
        return (
            f"this sweep cannot separate the fixed and the per-token cost (a = {1000 * a:.2f} ms, "
            f"b = {1000 * b:.2f} ms/token, and an interval includes 0): measure more draft lengths, more runs, "
            f"or on a quieter machine"
        )
    caveat = "" if not math.isnan(a_ci[0]) else " (no residual degrees of freedom, so no interval supports this)"
    if share > 0.5:
        return (
            f"the fixed per-pass cost dominates: at {k:g} draft tokens the fixed part is {100 * share:.0f} % "
            f"of a verify pass (a = {1000 * a:.2f} ms, b = {1000 * b:.2f} ms/token), so verifying more "
            f"tokens per pass is cheap and fewer, longer cycles win while acceptance holds{caveat}"
        )
    return (
        f"the per-token cost dominates: at {k:g} draft tokens the fixed part is only {100 * share:.0f} % of a "
        f"verify pass (a = {1000 * a:.2f} ms, b = {1000 * b:.2f} ms/token), so every rejected draft token "
        f"costs real time and long drafts pay only when acceptance stays high{caveat}"
    )


def fit(configurations: dict[str, Configuration], runs: dict[str, list[Run]]) -> CostModel:
    counts = {n: c for n, c in ((n, counts_of(configurations[n], runs.get(n, []))) for n in configurations) if c}
    spec_k = [cnt.draft_per_cycle for cnt in counts.values() if cnt.verify_steps]
    if not spec_k:
        raise NotIdentifiable(
            "the cost model is not identifiable: no configuration reports verify steps "
            "(llama.cpp reports them with --metrics; SGLang and vLLM always do)"
        )
    parameters, dof, covariance = fit_cycle_time(list(counts.values()))
    a, b, c = (p.value for p in parameters)
    theta = np.asarray([a, b, c])
    baseline = next(n for n, cfg in configurations.items() if cfg.baseline)
    rows = []
    for name, cnt in counts.items():
        predicted_s = float(np.dot(cnt.design(with_draft=True), theta))  # c is 0 without a draft model
        measured, predicted = cnt.decoded / cnt.decode_s, cnt.decoded / predicted_s
        rows.append(
            {
                "configuration": name,
                "group": cnt.group,
                "draft_model": cnt.draft_model,
                "target_passes": cnt.passes,
                "target_tokens": cnt.target_tokens,
                "draft_tokens_per_cycle": cnt.draft_per_cycle,
                "accepted_per_cycle": cnt.accepted_per_cycle,
                "uncovered_fraction": cnt.uncovered,
                "measured_tok_s": measured,
                "predicted_tok_s": predicted,
                "error_pct": _without_noise(100.0 * (predicted - measured) / measured),
            }
        )
    table = pd.DataFrame(rows)
    groups = _groups(configurations, counts, a, b, c, covariance)
    base = counts.get(baseline)
    conclusion = conclude(
        a,
        b,
        round(float(np.median(spec_k)), 1),
        (parameters[0].ci_low, parameters[0].ci_high),
        (parameters[1].ci_low, parameters[1].ci_high),
    )
    return CostModel(
        parameters=parameters,
        table=table,
        groups=groups,
        baseline_tok_s=base.decoded / base.decode_s if base else math.nan,
        conclusion=conclusion,
        degrees_of_freedom=dof,
    )


def _groups(
    configurations: dict[str, Configuration],
    counts: dict[str, Counts],
    a: float,
    b: float,
    c: float,
    covariance: np.ndarray,
) -> list[Group]:
    groups = []
    for group_name in dict.fromkeys(cnt.group for cnt in counts.values() if cnt.verify_steps):
        members = [cnt for cnt in counts.values() if cnt.group == group_name and cnt.verify_steps]
        axes = sorted({axis for m in members for axis in configurations[m.configuration].axes})
        axis = axes[0] if len(axes) == 1 else None
        draft = members[0].draft_model
        group = Group(
            name=group_name,
            draft_model=draft,
            alpha=fit_alpha([(m.draft_per_cycle, m.accepted_per_cycle) for m in members]),
            uncovered=float(np.mean([m.uncovered for m in members])),
            axis=axis,
            points=[
                (configurations[m.configuration].axes.get(axis) if axis else None, m.draft_per_cycle) for m in members
            ],
        )
        top = max(48.0, 2.0 * max(m.draft_per_cycle for m in members))
        group.curve_k = np.linspace(0.0, top, 481)
        c_group = c if draft else 0.0
        group.curve = tok_s(group.curve_k, a, b, c_group, group.alpha, group.uncovered)
        group.curve_low, group.curve_high = _band(group.curve_k, covariance, (a, b, c_group), group, draft)
        best = int(np.argmax(group.curve))
        group.optimum_k, group.optimum_tok_s = float(group.curve_k[best]), float(group.curve[best])
        group.next_configuration = _next(group)
        groups.append(group)
    return groups


def _band(
    k: np.ndarray, covariance: np.ndarray, theta: tuple[float, float, float], group: Group, draft: bool
) -> tuple[np.ndarray, np.ndarray]:
    """95 % band of the curve from the fitted parameters' covariance (seeded normal draws)."""
    if np.isnan(covariance).any():
        return np.full_like(k, np.nan), np.full_like(k, np.nan)
    rng = np.random.default_rng(CURVE_SEED)
    size = covariance.shape[0]
    draws = rng.multivariate_normal(np.asarray(theta[:size]), covariance, size=2000)
    c_draws = draws[:, 2] if size > 2 and draft else np.zeros(len(draws))
    curves = tok_s(k[None, :], draws[:, :1], draws[:, 1:2], c_draws[:, None], group.alpha, group.uncovered)
    low, high = np.quantile(curves, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2], axis=0)
    return low, high


def optimum_value(group: Group) -> float | None:
    """The predicted optimum in the swept axis's own units (None: no numeric axis, or no optimum in range):
    interpolated between the measured draft lengths, or beyond them scaled by the nearest one's ratio."""
    measured = sorted((k, v) for v, k in group.points)
    if (
        group.axis is None
        or not measured
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for _, v in measured)
        or not group.curve_k[1] < group.optimum_k < group.curve_k[-1]
    ):
        return None
    ks = np.asarray([k for k, _ in measured])
    values = np.asarray([float(v) for _, v in measured])
    if len(ks) > 1 and ks.min() <= group.optimum_k <= ks.max():
        return float(np.interp(group.optimum_k, ks, values))
    nearest = min(measured, key=lambda p: abs(p[0] - group.optimum_k))
    return float(nearest[1]) * group.optimum_k / nearest[0] if nearest[0] else None


def _next(group: Group) -> str:
    if group.optimum_k <= group.curve_k[1]:
        return (
            "none: the model predicts that this kind of speculation does not pay at any draft length "
            "(drafting and verifying cost more than the accepted tokens save)"
        )
    if group.optimum_k >= group.curve_k[-1]:
        return (
            f"the curve still rises at {group.curve_k[-1]:.0f} draft tokens per cycle (acceptance "
            f"alpha = {group.alpha:.3f} leaves no optimum in range): measure a longer draft to find where "
            f"acceptance falls off"
        )
    measured = sorted((k, v) for v, k in group.points)
    nearest = min(measured, key=lambda p: abs(p[0] - group.optimum_k))
    if abs(nearest[0] - group.optimum_k) <= max(1.0, 0.15 * group.optimum_k):
        return f"the predicted optimum (about {group.optimum_k:.1f} draft tokens per cycle) is already measured" + (
            f" ({group.axis} = {nearest[1]})" if group.axis else ""
        )
    suggestion = optimum_value(group)
    if suggestion is None:
        return f"measure a configuration drafting about {group.optimum_k:.1f} tokens per cycle"
    return (
        f"{group.axis} = {max(1, round(suggestion))} (predicted to draft about {group.optimum_k:.1f} tokens "
        f"per cycle, {group.optimum_tok_s:.1f} tok/s)"
    )


def parameters_frame(model: CostModel) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "parameter": p.name,
                "value_ms": 1000 * p.value,
                "ci95_low_ms": 1000 * p.ci_low,
                "ci95_high_ms": 1000 * p.ci_high,
                "meaning": p.meaning,
            }
            for p in model.parameters
        ]
    )


def fit_or_reason(configurations: dict[str, Configuration], runs: dict[str, list[Run]]) -> tuple[CostModel | None, str]:
    """The fitted model and its report, or None and why a sweep without different draft lengths has none."""
    try:
        model = fit(configurations, runs)
    except NotIdentifiable as reason:
        return None, f"# Speculation cost model\n\nNot fitted: {reason}.\n"
    return model, report(model)


def fit_sweep(configurations: dict[str, Configuration], runs: dict[str, list[Run]]) -> tuple[CostModel | None, str]:
    """``fit_or_reason`` on a sweep as the tables see it: the runs that count, every session of a configuration
    pooled under its name."""
    counted = {name: kept_and_excluded(records)[0] for name, records in runs.items()}
    return fit_or_reason(design.measured_configurations(configurations), design.merged_runs(configurations, counted))


def report(model: CostModel) -> str:
    """The model's findings in words, for results/costmodel.md and the console."""
    lines = [
        "# Speculation cost model",
        "",
        "Fitted from wall time and counters only (llama.cpp has no per-cycle draft/verify timer): "
        "decode time = a * target passes + b * tokens the target verified + c * tokens a draft model "
        f"drafted; weighted least squares over configuration means ({model.degrees_of_freedom} residual "
        "degrees of freedom; 95 % Student-t intervals, which include launch-to-launch drift).",
        "",
    ]
    for p in model.parameters:
        lines.append(
            f"- {p.name} = {1000 * p.value:.3f} ms [95 % CI {1000 * p.ci_low:.3f}, {1000 * p.ci_high:.3f}]: {p.meaning}"
        )
    lines += ["", f"Conclusion: {model.conclusion}.", ""]
    for g in model.groups:
        lines.append(
            f"- group {g.name}: acceptance per draft token alpha = {g.alpha:.3f} (geometric fit to accepted "
            f"vs drafted per cycle), {100 * g.uncovered:.0f} % of tokens not covered by any draft; "
            f"predicted optimum {g.optimum_k:.1f} draft tokens per cycle at {g.optimum_tok_s:.1f} tok/s; "
            f"next worth measuring: {g.next_configuration}"
        )
    lines += [
        "",
        "Predicted vs measured decode tok/s per configuration (decoded tokens / mean decode time; the time "
        "model applied to the measured counts):",
        "",
    ]
    for row in model.table.itertuples():
        lines.append(
            f"- {row.configuration}: measured {row.measured_tok_s:.1f}, predicted {row.predicted_tok_s:.1f} "
            f"({row.error_pct:+.1f} %)"
        )
    return "\n".join(lines) + "\n"


def _without_noise(percent: float) -> float:
    """A percentage rounded to 1e-9: an exact fit's error is 0.0, not +-1e-14 that differs between
    numeric libraries (and flips the sign printed in costmodel.md)."""
    return round(percent, 9) + 0.0
