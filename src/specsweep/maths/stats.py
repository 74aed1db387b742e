"""Statistics of repeated measurements, with every interval and test named and justified.

summary.csv's headline numbers (``decode_tok_s_ci95_*``, ``speedup_ci95_*``, ``speedup_p_value``) are
computed by analyse/replicates.py: sessions (server launches) are the replicates, on the log scale, with
a spread pooled over the sweep's configurations and Holm's adjustment (``holm``) over the comparisons
against a baseline; that module says why. The functions below are the building blocks: the t critical
value and tail, Holm, and the run-level intervals the load, drift, effects and comparison tables use.
What those are, and why:

* **Mean ± 95 % Student-t interval** (``t_interval``): mean ± t(0.975, n-1) · s/√n, over the values
  given (windows of a load level, runs of one session in drift.csv). It keeps its nominal coverage
  under roughly normal noise between those values; it says nothing about what varies between them
  and the next launch.
* **Percentile bootstrap interval** (``bootstrap_mean_interval``): assumes no distribution, but with 5
  values it is too narrow (about 85 % coverage: resampling shrinks the spread by √((n-1)/n) and uses
  normal, not t, quantiles, so it is roughly P(|t₄| < 1.96·√0.8) = 0.85; the test measures 82-87 %),
  so no table headlines it.
* **Ratio CI, Fieller** (``fieller_ratio_interval``): the exact interval of a ratio of two independent
  normal means, with Welch-Satterthwaite degrees of freedom (comparison.csv, the effects table). The
  bootstrap of the ratio of means (``bootstrap_ratio_interval``) is given beside it, with the same
  small-sample caveat.
* **Significance, Welch's t-test** (``welch_p_value``): the question is whether two *means* differ,
  and speculative configurations have visibly different spread from the baseline, so the
  unequal-variance t-test is the right one. Mann-Whitney was rejected: it tests a shift in
  distribution rather than the means, and with 5 + 5 values its smallest two-sided p-value is 0.008.

Every resampling uses a fixed seed, so identical input gives identical output. Functions take the
values on the last axis and broadcast over leading axes (a whole simulated study, or a sweep's
configurations at once: ``describe_many``); these functions treat each row on its own (summary.csv's
rows share the pooled spread of replicates.py).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np

CONFIDENCE = 0.95
ALPHA = 1.0 - CONFIDENCE
MIN_RUNS_FOR_CI = 3
CV_WARNING = 0.10  # run-to-run coefficient of variation above which a configuration is flagged noisy
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20_261_129

MEAN_CI_METHOD = "Student t"
SPEEDUP_CI_METHOD = "Fieller"
TEST_METHOD = "Welch t-test"


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    std: float
    cv: float
    minimum: float
    maximum: float
    median: float
    ci_low: float
    ci_high: float
    boot_low: float = float("nan")
    boot_high: float = float("nan")


@dataclass(frozen=True)
class Ratio:
    """``mean(candidate) / mean(reference)`` with its intervals and Welch's p-value."""

    ratio: float
    ci_low: float
    ci_high: float
    boot_low: float
    boot_high: float
    p_value: float
    reference_runs: int = 0

    @property
    def significant(self) -> bool | None:
        """p < ALPHA; None when no test was possible (NaN p: fewer than 2 runs on a side, or no spread on
        either side and equal means)."""
        return None if math.isnan(self.p_value) else bool(self.p_value < ALPHA)

    @property
    def straddles_one(self) -> bool:
        return not (self.ci_low > 1.0 or self.ci_high < 1.0)


def _scipy_stats() -> ModuleType:
    """scipy.stats, imported on first use: it takes seconds to import, and a bench job (which imports
    this module through adaptive.py) only needs it when adaptive repetitions are on."""
    from scipy import stats

    return stats


@functools.lru_cache(maxsize=256)
def t_critical(df: int, confidence: float = CONFIDENCE) -> float:
    """Two-sided Student-t critical value t(0.5 + confidence/2, df), for every interval specsweep
    reports (scipy's t.ppf, ~0.3 ms a call: a sweep asks for the same few degrees of freedom)."""
    return float(_scipy_stats().t.ppf(0.5 + confidence / 2, df))


def _clean(values: Sequence[float]) -> np.ndarray:
    """The values as floats, None and NaN left out (a run that did not report one)."""
    data = np.asarray(values, dtype=float)  # None becomes NaN
    return data[~np.isnan(data)]


def _pow(base: np.ndarray | float, exponent: int) -> np.ndarray:
    """``base ** exponent`` computed one NumPy scalar at a time (the C library's pow).

    NumPy squares an array by multiplying, which differs from pow in the last bit about once in a
    thousand squares. The formulas below were written for one configuration's scalars; with this they
    give the same bits for a whole sweep at once as for one configuration alone, as they always did.
    """
    base = np.asarray(base, dtype=float)
    return np.array([value**exponent for value in base.ravel()], dtype=float).reshape(base.shape)


def t_interval(samples: np.ndarray, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Student-t interval of the mean along the last axis (NaN with fewer than 3 runs)."""
    samples = np.asarray(samples, dtype=float)
    n = samples.shape[-1]
    if n < MIN_RUNS_FOR_CI:
        nan = np.full(samples.shape[:-1], np.nan)
        return nan, nan.copy()
    mean = samples.mean(axis=-1)
    half = t_critical(n - 1, confidence) * samples.std(axis=-1, ddof=1) / math.sqrt(n)
    return mean - half, mean + half


@functools.lru_cache(maxsize=16)
def _indices(sizes: tuple[int, ...], resamples: int, seed: int) -> np.ndarray:
    """The bootstrap's index draw for a sample of ``sizes[-1]`` runs: shape (resamples, runs).

    A fresh generator seeded with ``seed`` draws the indices of samples of ``sizes[:-1]`` runs first
    (the candidate's, for the baseline's draw in a speedup) and then this one's. The draw depends on
    the sizes and the seed only, so it is made once per run count and reused.
    """
    rng = np.random.default_rng(seed)
    for n in sizes[:-1]:
        rng.integers(0, n, size=(resamples, n))
    # left writable, though shared: np.take copies a read-only index on every call, 6 times slower
    return rng.integers(0, sizes[-1], size=(resamples, sizes[-1]))


GATHER_BYTES = 8 * 2**20  # resampled runs held at once while averaging them (more is slower, not faster)


def _bootstrap_means(samples: np.ndarray, earlier: tuple[int, ...], resamples: int, seed: int) -> np.ndarray:
    """Mean of each bootstrap resample of each row: shape (..., resamples).

    Every row is resampled with the same index draw (``_indices``, after samples of sizes
    ``earlier``), so a row's resampled means depend on its own runs and the seed, never on the other
    rows of the batch: a configuration gets the same interval in a sweep as alone.
    """
    samples = np.ascontiguousarray(samples, dtype=float)
    return _means_of(samples.tobytes(), samples.shape, earlier, resamples, seed)


# The last two results are kept: a configuration's resampled means serve its mean interval and then
# its speedup's, and the baseline's (one draw per candidate run count) serve every speedup block.
@functools.lru_cache(maxsize=2)
def _means_of(raw: bytes, shape: tuple[int, ...], earlier: tuple[int, ...], resamples: int, seed: int) -> np.ndarray:
    runs = shape[-1]
    rows = np.frombuffer(raw).reshape(-1, runs)
    index = _indices((*earlier, runs), resamples, seed)
    means = np.empty((len(rows), resamples))
    step = max(1, GATHER_BYTES // index.nbytes)
    for start in range(0, len(rows), step):
        # take (faster than fancy indexing) lays each resample's runs out contiguously, so the mean
        # adds them in the same order whatever the number of rows
        np.take(rows[start : start + step], index, axis=-1).mean(axis=-1, out=means[start : start + step])
    means.flags.writeable = False
    return means.reshape(*shape[:-1], resamples)


def _percentile_interval(estimates: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The central ``confidence`` range of resampled estimates along the last axis (linear quantiles)."""
    low, high = np.quantile(estimates, [(1 - confidence) / 2, (1 + confidence) / 2], axis=-1)
    return low, high


def bootstrap_mean_interval(
    samples: np.ndarray,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of the mean along the last axis (seeded: same input, same output)."""
    samples = np.asarray(samples, dtype=float)
    if samples.shape[-1] < MIN_RUNS_FOR_CI:
        nan = np.full(samples.shape[:-1], np.nan)
        return nan, nan.copy()
    return _percentile_interval(_bootstrap_means(samples, (), resamples, seed), confidence)


def _nan_unless_runs(x: np.ndarray, y: np.ndarray, minimum: int) -> np.ndarray | None:
    """NaN for every pair of a batch when either sample has fewer than ``minimum`` runs, else None."""
    if min(x.shape[-1], y.shape[-1]) >= minimum:
        return None
    return np.full(np.broadcast_shapes(x.shape[:-1], y.shape[:-1]), np.nan)


def fieller_ratio_interval(
    candidate: np.ndarray, reference: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """Fieller's interval of mean(candidate) / mean(reference), independent samples, last axis.

    Solves (x̄ - R·ȳ)² ≤ t² (s_x²/n_x + R² s_y²/n_y) for R, with Welch-Satterthwaite degrees of
    freedom at the point estimate. NaN when the reference mean is not clearly non-zero (the set
    would be unbounded) or with fewer than 3 runs on either side.
    """
    x, y = np.asarray(candidate, dtype=float), np.asarray(reference, dtype=float)
    nx, ny = x.shape[-1], y.shape[-1]
    if (nan := _nan_unless_runs(x, y, MIN_RUNS_FOR_CI)) is not None:
        return nan, nan.copy()
    mx, my = x.mean(axis=-1), y.mean(axis=-1)
    vx, vy = x.var(axis=-1, ddof=1) / nx, y.var(axis=-1, ddof=1) / ny
    ratio = mx / my
    with np.errstate(divide="ignore", invalid="ignore"):
        df = _pow(vx + _pow(ratio, 2) * vy, 2) / (_pow(vx, 2) / (nx - 1) + _pow(ratio, 4) * _pow(vy, 2) / (ny - 1))
    df = np.where(np.isfinite(df), df, nx + ny - 2)
    t2 = _pow(_scipy_stats().t.ppf(0.5 + confidence / 2, df), 2)
    a = _pow(my, 2) - t2 * vy
    disc = _pow(mx * my, 2) - a * (_pow(mx, 2) - t2 * vx)
    bounded = (a > 0) & (disc >= 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.sqrt(np.where(bounded, disc, np.nan))
        low = np.where(bounded, (mx * my - root) / a, np.nan)
        high = np.where(bounded, (mx * my + root) / a, np.nan)
    return low, high


def bootstrap_ratio_interval(
    candidate: np.ndarray,
    reference: np.ndarray,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap of the ratio of means, each sample resampled on its own (seeded).

    The reference's draw follows the candidate's from the same seed, so with a one-dimensional
    reference (the baseline) it is resampled once for every candidate of a batch.
    """
    x, y = np.asarray(candidate, dtype=float), np.asarray(reference, dtype=float)
    if (nan := _nan_unless_runs(x, y, MIN_RUNS_FOR_CI)) is not None:
        return nan, nan.copy()
    ratios = _bootstrap_means(x, (), resamples, seed) / _bootstrap_means(y, (x.shape[-1],), resamples, seed)
    return _percentile_interval(ratios, confidence)


def _sample_variance(samples: np.ndarray) -> np.ndarray:
    """Unbiased variance along the last axis in scipy's arithmetic: mean of squared deviations · n/(n-1)."""
    n = samples.shape[-1]
    deviations = samples - samples.mean(axis=-1, keepdims=True)
    return (deviations**2).mean(axis=-1) * (n / (n - 1))


def welch_p_value(candidate: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Two-sided p-value of Welch's unequal-variance t-test along the last axis (NaN with < 2 runs).

    t = (x̄ - ȳ) / √(s_x²/n_x + s_y²/n_y) against Student's t with Welch-Satterthwaite degrees of
    freedom, in the arithmetic of scipy.stats.ttest_ind(equal_var=False) for one pair of samples (the
    tests compare the two) without its ~1 ms a call, which is a second per 1,000 configurations.
    """
    from scipy import special  # imported on first use, as _scipy_stats

    x, y = np.asarray(candidate, dtype=float), np.asarray(reference, dtype=float)
    nx, ny = x.shape[-1], y.shape[-1]
    if (nan := _nan_unless_runs(x, y, 2)) is not None:
        return nan
    vx, vy = _sample_variance(x) / nx, _sample_variance(y) / ny
    # identical runs (zero variance on both sides) give NaN (equal means) or 0, not a warning
    with np.errstate(invalid="ignore", divide="ignore"):
        df = _pow(vx + vy, 2) / (_pow(vx, 2) / (nx - 1) + _pow(vy, 2) / (ny - 1))
        t = (x.mean(axis=-1) - y.mean(axis=-1)) / np.sqrt(vx + vy)
    df = np.where(np.isnan(df), 1.0, df)  # both variances zero: t is infinite or NaN whatever df is
    return 2 * special.stdtr(df, -np.abs(t))


BLOCK_BYTES = 4 * 2**20  # resampled means of one block of describe_many: bounded memory, no slower than more


def describe_many(
    samples: Sequence[Sequence[float]], reference: Sequence[float] | None = None, intervals: bool = True
) -> list[tuple[Summary, Ratio | None]]:
    """``describe`` of each sample and, given a reference, its ``ratio`` to it, for many at once.

    Samples with the same number of runs are stacked and computed a block of rows at a time: every
    function above works row by row on a batch, so each sample gets exactly the numbers it would get
    alone (tests/unit/analyse/test_aggregate.py checks it). Without ``intervals`` a Summary's ci_* and boot_* stay
    NaN, for callers that need only the mean, median or spread (the bootstrap is most of the cost).
    """
    cleaned = [_clean(values) for values in samples]
    y = None if reference is None else _clean(reference)
    by_size: dict[int, list[int]] = {}
    for index, data in enumerate(cleaned):
        by_size.setdefault(len(data), []).append(index)
    found: dict[int, tuple[Summary, Ratio | None]] = {}
    step = max(1, BLOCK_BYTES // (8 * BOOTSTRAP_RESAMPLES))
    for n, members in by_size.items():
        for start in range(0, len(members), step):
            block = members[start : start + step]
            rows = np.stack([cleaned[i] for i in block]).reshape(len(block), n)
            found.update(zip(block, _describe_block(rows, y, intervals), strict=True))
    return [found[index] for index in range(len(cleaned))]


def _describe_block(x: np.ndarray, y: np.ndarray | None, intervals: bool) -> list[tuple[Summary, Ratio | None]]:
    """``describe_many`` of rows with the same number of runs (at least one row)."""
    rows, n = x.shape
    nan = np.full(rows, np.nan)
    if n == 0:
        summaries = [Summary(0, *[math.nan] * 8)] * rows
    else:
        mean = x.mean(axis=-1)
        std = x.std(axis=-1, ddof=1) if n > 1 else nan
        with np.errstate(divide="ignore", invalid="ignore"):
            cv = np.where(mean != 0, std / mean, np.nan)
        low, high = t_interval(x) if intervals else (nan, nan)
        boot_low, boot_high = bootstrap_mean_interval(x) if intervals else (nan, nan)
        columns = (mean, std, cv, x.min(axis=-1), x.max(axis=-1), np.median(x, axis=-1), low, high, boot_low, boot_high)
        summaries = [Summary(n, *values) for values in zip(*(c.tolist() for c in columns), strict=True)]
    if y is None:
        return [(summary, None) for summary in summaries]
    if n == 0 or len(y) == 0:
        return [(summary, Ratio(*[math.nan] * 6)) for summary in summaries]
    low, high = fieller_ratio_interval(x, y)
    boot_low, boot_high = bootstrap_ratio_interval(x, y)
    columns = (mean / y.mean(), low, high, boot_low, boot_high, welch_p_value(x, y))
    ratios = [Ratio(*values, reference_runs=len(y)) for values in zip(*(c.tolist() for c in columns), strict=True)]
    return list(zip(summaries, ratios, strict=True))


def describe(values: Sequence[float], intervals: bool = True) -> Summary:
    """Mean, spread, median and intervals of one sample (``describe_many`` of one)."""
    return describe_many([values], intervals=intervals)[0][0]


def ratio(candidate: Sequence[float], reference: Sequence[float]) -> Ratio:
    """Speedup of ``candidate`` over ``reference``: Fieller CI, bootstrap CI, Welch p-value."""
    speedup = describe_many([candidate], reference)[0][1]
    assert speedup is not None  # a reference always gives a ratio
    return speedup


def warnings_for(summary: Summary, speedup: Ratio | None = None, cv_limit: float = CV_WARNING) -> list[str]:
    """Reasons not to trust a configuration's numbers at face value (empty when there are none)."""
    found = []
    if summary.n == 0:
        return ["no runs"]
    if summary.n < MIN_RUNS_FOR_CI:
        found.append(f"only {summary.n} run(s): no confidence interval (need >= {MIN_RUNS_FOR_CI})")
    if not math.isnan(summary.cv) and summary.cv > cv_limit:
        found.append(f"noisy: CV {100 * summary.cv:.1f} % > {100 * cv_limit:.0f} %")
    if speedup is not None and not math.isnan(speedup.ci_low) and speedup.straddles_one:
        found.append(
            f"speedup CI [{speedup.ci_low:.3f}, {speedup.ci_high:.3f}] straddles 1: no demonstrated difference"
        )
    elif (
        speedup is not None
        and not math.isnan(speedup.ratio)
        and math.isnan(speedup.ci_low)
        and summary.n >= MIN_RUNS_FOR_CI
    ):
        if speedup.reference_runs < MIN_RUNS_FOR_CI:  # Fieller needs runs on both sides
            found.append(
                f"the baseline has only {speedup.reference_runs} run(s): no speedup CI (need >= {MIN_RUNS_FOR_CI})"
            )
        else:
            found.append("speedup CI unbounded: the baseline mean is not clearly non-zero")
    return found


def t_sf(t: float, df: float) -> float:
    """Upper tail P(T > t) of Student's t with ``df`` degrees of freedom."""
    from scipy import special

    return float(special.stdtr(df, -t))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (NaN entries are not comparisons and stay NaN).

    Sorted ascending, the i-th (0-based) of m is multiplied by m - i, made non-decreasing and capped at 1:
    rejecting adjusted p < alpha controls the family-wise error rate at alpha for any dependence between tests.
    """
    tested = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    adjusted = [math.nan] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * p))
        adjusted[index] = running
    return adjusted


def simultaneous_confidence(comparisons: int, confidence: float = CONFIDENCE) -> float:
    """Per-interval confidence that makes ``comparisons`` intervals hold together (Bonferroni)."""
    return 1.0 - (1.0 - confidence) / max(1, comparisons)
