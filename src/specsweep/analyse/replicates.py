"""Sessions as replicates, prompts as blocks: the statistics behind summary.csv and categories.csv.

**Estimand.** A configuration's throughput is the workload's decode rate: the decode tokens of one pass
over the prompts measured divided by the decode time of that pass, ``Σ_p (tokens_p - 1) / Σ_p t_p``,
with ``t_p`` the mean decode time of prompt p's runs in the session (a prompt run twice weighs as one).
That is the rate at which a server finishes this workload; a mean of per-run rates over-weights the
fast prompts (a speedup of 1.095 against the wall-time ratio 1.051 on one sweep). The speedup is the ratio of two such
rates over the prompts both configurations measured, so each prompt is its own block: the spread
between categories is part of the workload, not noise.

**Unit.** A session (one server launch) is the replicate: launches shift throughput by a few percent,
so runs of one session are not independent replicates of the configuration. The model, on the log
scale (rates and ratios are positive; a log interval cannot cross zero), is
``log R_cs = μ_c + e_cs`` with ``e_cs ~ N(0, sigma²)``, one sigma for every configuration of the sweep (a
one-way random-effects layout; sigma includes the within-session noise of a session's mean), estimated by
pooling the within-configuration spread of the session log-rates (``Pooled``, ``Σ(S_c - 1)`` degrees
of freedom). Intervals are ``exp(mean ± t·sigma/√S)``; a speedup's is ``exp(Δ ± t·sigma·√(1/S_c + 1/S_b))``
with its two-sided t-test.

**A configuration whose spread is larger.** One sigma would give a configuration with 9x the others' launch
variance intervals that cover 0.81-0.83 (and a noisy baseline 9-12 % A/A false positives). Each
configuration's spread is tested against the pool of the others' (one-sided F test at ``SPREAD_ALPHA``,
``larger_spread``); one that is larger gets its own: its tok/s interval ``exp(mean ± t(S - 1)·s_c/√S)``, and
each comparison it enters Welch-Satterthwaite (both configurations' own variances, Satterthwaite's df). The
others keep the pooled spread, which still includes it: leaving it out after the test would make their
intervals too narrow. The test needs sessions (9x variance, 1,000 sweeps, 3 % / 10 % launch offsets): from
``OWN_SPREAD_SESSIONS`` (6) the noisy configuration's x1.10 interval covers 0.95 and a noisy baseline's A/A
false positives are 3.4 %; at 5, 0.94 and 5.6-6.3 %; at 2 (1 df per configuration) the test finds a 9x
variance in under half the sweeps: 0.87 and 8 %. Below 6 the claim is not made (``FEW_SESSIONS_NOTE``). The
test's level trades power at equal spread: at 5 % the x1.10 power at 2 sessions and 3 % launch offsets is 46 %
(52 % with one sigma throughout); at 10 % it is 40 % and the claim still needs 6 sessions (5.3 % false
positives at 5); at 20 % (a session-level model) equal-spread intervals cover 0.97 at 2 sessions and the power
falls to about 30 % (benchmarks/coverage.py).

With one session per configuration the unit falls back to a pass over the
prompts within the session (when a session holds several), and the intervals ignore launch-to-launch
variation (``Pooled.note``): a launch offset is then indistinguishable from a difference between
configurations, so no test declares anything (``Pooled.declares``); with one pass too, no interval is possible.

**Multiplicity.** The sweep's comparisons, whatever their baseline, are one family: ``stats.holm`` adjusts their
p-values, and the configuration that looks best is given a simultaneous (Bonferroni) interval, which
holds for whichever configuration is selected.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from specsweep.maths import stats
from specsweep.record.results import Run

SESSION, PASS = "session", "pass"
ONE_SESSION_NOTE = (
    "one session per configuration: launch-to-launch variation not measured; nothing declared (benchmark.sessions >= 2)"
)
NOT_ESTIMABLE_NOTE = "one session and one pass over the prompts: noise not estimable, no interval"
OWN_SPREAD_NOTE = "spread larger than the others' (F test): intervals from its own spread"
SPREAD_ALPHA = 0.05  # the level of the test that gives a configuration its own spread
OWN_SPREAD_SESSIONS = 6  # sessions from which that test finds a noisier configuration (the module doc)
FEW_SESSIONS_NOTE = (
    f"below {OWN_SPREAD_SESSIONS} sessions a configuration whose launch-to-launch spread is larger than the others' "
    f"is not reliably found, so its intervals may be too narrow (benchmark.sessions >= {OWN_SPREAD_SESSIONS})"
)


def prompt_times(runs: Sequence[Run], prompts: Iterable[int] | None = None) -> dict[int, tuple[float, float]]:
    """Per prompt of one session: (decode tokens, mean decode seconds over its runs); only ``prompts``
    when given. Runs without a decode rate are left out."""
    wanted = None if prompts is None else set(prompts)
    found: dict[int, list[tuple[float, float]]] = {}
    for run in runs:
        rate = run.decode_tokens_per_s  # (tokens - 1) / decode_s: the decode time, as the rate was computed
        if (wanted is None or run.prompt_index in wanted) and rate is not None and rate > 0:
            found.setdefault(run.prompt_index, []).append((run.tokens - 1, (run.tokens - 1) / rate))
    # plain sums: a session has few runs per prompt, and numpy's mean costs microseconds a call
    return {p: (sum(t for t, _ in v) / len(v), sum(s for _, s in v) / len(v)) for p, v in found.items()}


def workload_rate(runs: Sequence[Run], prompts: Iterable[int] | None = None) -> float:
    """Decode tokens over decode time of one pass over ``prompts`` (default: every prompt of the runs)."""
    times = prompt_times(runs, prompts)
    seconds = sum(s for _, s in times.values())
    return sum(t for t, _ in times.values()) / seconds if seconds else math.nan


def passes(runs: Sequence[Run]) -> list[list[Run]]:
    """The complete passes of one session: pass k holds each prompt's k-th run (in run order); a pass
    that misses a prompt is left out."""
    prompts = sorted({r.prompt_index for r in runs})
    by_prompt = {p: sorted((r for r in runs if r.prompt_index == p), key=lambda r: r.run) for p in prompts}
    complete = min((len(v) for v in by_prompt.values()), default=0)
    return [[by_prompt[p][k] for p in prompts] for k in range(complete)]


def within_session_cv(sessions: Sequence[Sequence[Run]]) -> float:
    """Run-to-run variation of one prompt within one session: the pooled standard deviation of the log
    decode rate of a prompt's repeated runs (≈ CV); NaN when no prompt ran twice in a session."""
    sd, _ = pooled_sd(
        [r.decode_tokens_per_s for r in runs if r.prompt_index == prompt]
        for runs in sessions
        for prompt in {r.prompt_index for r in runs}
    )
    return sd


def common_prompts(*sessions: Sequence[Run]) -> set[int]:
    """The prompts every one of these sessions measured (the blocks a comparison is paired on)."""
    sets = [{r.prompt_index for r in runs} for runs in sessions if runs]
    return set.intersection(*sets) if sets else set()


@dataclass(frozen=True)
class Pooled:
    """The sweep's replicate unit and the pooled standard deviation of log unit rates within a configuration."""

    unit: str  # SESSION, PASS, or "" when no configuration has two units
    sd: float
    df: float  # an integer, but for a Satterthwaite combination (category_spread)

    @property
    def note(self) -> str:
        return {SESSION: "", PASS: ONE_SESSION_NOTE}.get(self.unit, NOT_ESTIMABLE_NOTE)

    @property
    def declares(self) -> bool:
        """Whether a test may declare a difference: only across launches (a pass interval is within one)."""
        return self.unit == SESSION

    def t(self, confidence: float = stats.CONFIDENCE) -> float:
        return stats.t_critical(self.df, confidence) if self.df else math.nan


def pooled_sd(groups: Iterable[Sequence[float]]) -> tuple[float, int]:
    """Pooled standard deviation of the logs of each group's values about the group's mean, and its df."""
    squares, df = 0.0, 0
    for values in groups:
        logs = np.log(np.asarray(values, dtype=float))
        logs = logs[np.isfinite(logs)]
        if len(logs) >= 2:
            squares += float(((logs - logs.mean()) ** 2).sum())
            df += len(logs) - 1
    return (math.sqrt(squares / df) if df else math.nan), df


def units(sessions: Sequence[Sequence[Run]], unit: str, prompts: Iterable[int] | None = None) -> list[float]:
    """The workload rate of each replicate: each session's, or each pass's of the (one) session."""
    if unit == PASS:
        return [workload_rate(one, prompts) for runs in sessions for one in passes(runs)]
    return [workload_rate(runs, prompts) for runs in sessions if runs]


def pooled(
    sessions: Mapping[str, Sequence[Sequence[Run]]], spread_from: Mapping[str, Sequence[Sequence[Run]]] | None = None
) -> Pooled:
    """The replicate unit of a sweep (sessions when some configuration has two, else passes when some
    session has two) with the pooled spread of its log rates (see the module doc), taken from
    ``spread_from`` (the quiet sessions: another process's load is no launch-to-launch noise of the engine)
    where that leaves a spread in the unit."""
    for unit in (SESSION, PASS):
        sd, df = pooled_sd(units(runs, unit) for runs in sessions.values())
        if df:
            quiet_sd, quiet_df = pooled_sd(units(runs, unit) for runs in (spread_from or {}).values())
            return Pooled(unit, quiet_sd, quiet_df) if quiet_df else Pooled(unit, sd, df)
    return Pooled("", math.nan, 0)


def larger_spread(sessions: Mapping[str, Sequence[Sequence[Run]]], model: Pooled) -> set[str]:
    """The configurations whose spread of log unit rates is larger than the pool of the others' (one-sided
    F test at SPREAD_ALPHA): their intervals use their own spread (see the module doc)."""
    from scipy import special  # imported on first use, as stats does

    unit = model.unit or SESSION
    spreads = {name: pooled_sd([units(runs, unit)]) for name, runs in sessions.items()}
    found = set()
    for name, (sd, df) in spreads.items():
        rest = [(s, d) for other, (s, d) in spreads.items() if other != name and d]
        rest_df = sum(d for _, d in rest)
        if not df or not rest_df:
            continue
        rest_variance = sum(s**2 * d for s, d in rest) / rest_df
        if sd > 0 and (rest_variance == 0 or special.fdtrc(df, rest_df, sd**2 / rest_variance) < SPREAD_ALPHA):
            found.add(name)
    return found


def _own_spread(logs: np.ndarray) -> tuple[float, float]:
    """The variance of the mean of these log rates from their own spread, and its df."""
    return float(logs.var(ddof=1)) / len(logs), len(logs) - 1


@dataclass(frozen=True)
class Level:
    """A configuration's workload rate: geometric mean over its units, with its 95 % interval."""

    n: int  # units (sessions, or passes of one session)
    rate: float
    ci_low: float
    ci_high: float
    unit_rates: tuple[float, ...]


def level(
    sessions: Sequence[Sequence[Run]], model: Pooled, confidence: float = stats.CONFIDENCE, own: bool = False
) -> Level:
    """``own``: the interval from this configuration's own spread (``larger_spread``), not the pooled one."""
    values = [v for v in units(sessions, model.unit or SESSION) if not math.isnan(v)]
    if not values:
        return Level(0, math.nan, math.nan, math.nan, ())
    logs = np.log(values)
    mean = float(logs.mean())
    if own and len(values) > 1:
        variance, df = _own_spread(logs)
        half = stats.t_critical(df, confidence) * math.sqrt(variance)
    else:
        half = model.t(confidence) * model.sd / math.sqrt(len(values))
    return Level(len(values), math.exp(mean), math.exp(mean - half), math.exp(mean + half), tuple(values))


@dataclass(frozen=True)
class Comparison:
    """Candidate over baseline, paired on their common prompts: ratio of workload rates, 95 % interval, p."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    log_ratio: float
    se: float
    df: float

    def interval(self, confidence: float) -> tuple[float, float]:
        """The interval at another confidence (the simultaneous one of a selected configuration)."""
        if not self.df or math.isnan(self.se):
            return math.nan, math.nan
        half = stats.t_critical(self.df, confidence) * self.se
        return math.exp(self.log_ratio - half), math.exp(self.log_ratio + half)


def compare(
    candidate: Sequence[Sequence[Run]],
    baseline: Sequence[Sequence[Run]],
    model: Pooled,
    prompts: set[int] | None = None,
    own: bool = False,
) -> Comparison:
    """The speedup of ``candidate``'s sessions over ``baseline``'s on ``prompts`` (default: their common ones);
    ``own``: one of them has a larger spread (``larger_spread``), so Welch-Satterthwaite on their own ones."""
    shared = prompts if prompts is not None else common_prompts(*candidate, *baseline)
    unit = model.unit or SESSION
    return compare_rates(units(candidate, unit, shared), units(baseline, unit, shared), model, own)


def compare_rates(
    candidate: Sequence[float], baseline: Sequence[float], model: Pooled, own: bool = False
) -> Comparison:
    """``compare`` on the units' workload rates (NaN ones left out)."""
    x = np.log([v for v in candidate if not math.isnan(v)])
    y = np.log([v for v in baseline if not math.isnan(v)])
    if not len(x) or not len(y):
        return Comparison(*[math.nan] * 6, 0)
    delta = float(x.mean() - y.mean())
    se, df = model.sd * math.sqrt(1 / len(x) + 1 / len(y)), model.df
    if own and len(x) > 1 and len(y) > 1:
        (vx, dx), (vy, dy) = _own_spread(x), _own_spread(y)
        se = math.sqrt(vx + vy)
        df = (vx + vy) ** 2 / (vx**2 / dx + vy**2 / dy) if vx + vy else dx + dy
    if not df:
        return Comparison(math.exp(delta), math.nan, math.nan, math.nan, delta, math.nan, 0)
    if se == 0:  # identical rates in every unit (a deterministic stand-in): the ratio is exact
        return Comparison(
            math.exp(delta), math.exp(delta), math.exp(delta), math.nan if delta == 0 else 0.0, delta, 0.0, 0
        )
    half = stats.t_critical(df) * se
    p = 2 * float(stats.t_sf(abs(delta) / se, df))
    return Comparison(math.exp(delta), math.exp(delta - half), math.exp(delta + half), p, delta, se, df)


def category_spread(matrices: Iterable[np.ndarray]) -> tuple[float, float]:
    """The standard deviation of one (configuration, category) cell's log rate in one session, and its
    Satterthwaite degrees of freedom, from each configuration's sessions x categories matrix of log rates.

    A launch moves every category of its session alike, so the cells are not independent: the two-way
    layout (session effect + residual, per configuration, pooled) gives the session mean square MS_s
    (estimates K·sigma_L² + sigma_e², S - 1 df each) and the residual one MS_e (sigma_e², (S - 1)(K - 1) df); a
    cell's variance sigma_L² + sigma_e² is MS_s/K + (K - 1)·MS_e/K, with Satterthwaite's df for that sum.
    NaN and 0 when no configuration has two sessions and two categories.
    """
    session_squares = session_df = residual_squares = residual_df = 0.0
    categories = 0
    for y in matrices:
        sessions, categories = y.shape
        if sessions < 2 or categories < 2:
            continue
        session_means, category_means, grand = y.mean(axis=1), y.mean(axis=0), y.mean()
        session_squares += categories * float(((session_means - grand) ** 2).sum())
        session_df += sessions - 1
        residual = y - session_means[:, None] - category_means[None, :] + grand
        residual_squares += float((residual**2).sum())
        residual_df += (sessions - 1) * (categories - 1)
    if not session_df or not residual_df:
        return math.nan, 0.0
    between, within = (
        session_squares / session_df / categories,
        residual_squares / residual_df * (categories - 1) / categories,
    )
    variance = between + within
    if variance == 0:
        return 0.0, session_df + residual_df
    df = variance**2 / (between**2 / session_df + within**2 / residual_df)
    return math.sqrt(variance), df


def paired(candidate: Sequence[float], baseline: Sequence[float]) -> Comparison:
    """Candidate unit k against baseline unit k, both log rates (session k of two sweeps): the ratio
    exp(mean difference) with its paired t interval and two-sided test, on len - 1 degrees of freedom."""
    d = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    delta = float(d.mean()) if len(d) else math.nan
    if len(d) < 2:
        return Comparison(math.exp(delta), math.nan, math.nan, math.nan, delta, math.nan, 0)
    se, df = float(d.std(ddof=1)) / math.sqrt(len(d)), len(d) - 1
    if se == 0:  # every pair moved alike (a deterministic stand-in): the ratio is exact
        return Comparison(
            math.exp(delta), math.exp(delta), math.exp(delta), math.nan if delta == 0 else 0.0, delta, 0, 0
        )
    half = stats.t_critical(df) * se
    p = 2 * float(stats.t_sf(abs(delta) / se, df))
    return Comparison(math.exp(delta), math.exp(delta - half), math.exp(delta + half), p, delta, se, df)
