"""Effects of the factors of a crossed design on decode tok/s and acceptance, with 95 % intervals.

For the configurations crossed from the same factors (factors.py), each cell (one combination of
levels) has its runs. Effects are contrasts of the cell means, each level against the factor's
reference level (its baseline level, else its first):

* **main effect** of level l of factor F: the mean over the other factors' level combinations of
  (cell at l) - (cell at the reference), and the same as a ratio of those two marginal means
  ("what NCCL tuning buys", in tok/s and as a factor);
* **interaction** of levels f of F and g of G: the difference of differences
  (f,g) - (f,ref G) - (ref F,g) + (ref F,ref G), averaged over the other factors ("does the depth
  effect change with NCCL tuning"). For tok/s it is taken on the log scale (of each run's rate), so
  it is the log of a ratio of ratios and 0 when the effects *multiply*, as speedups do: on the
  additive scale two independent multiplicative effects read as a "significant interaction" in 91 %
  of simulated sweeps. Acceptance, a proportion, stays additive.

**Unit.** For tok/s the session (server launch, plan/design.py) is the replicate, as in summary.csv: a
launch shifts every run of it alike, so runs of two sessions pooled into a cell as independent gave
p < 0.05 for a null main effect in a third of sweeps at 10 % launch offsets. When every cell has two
sessions, a cell's values are its sessions' mean log rates (the log cells) and their exponentials, with
one spread pooled over the cells (``Cell.pooled``, Σ(sessions - 1) degrees of freedom), as
analyse/replicates.py pools it. With one session per configuration the runs are the unit: the effects
are then within-launch, and a note says so. Acceptance stays per run.

With runs as the unit the cells are independent samples with their own variances, so a difference
has a Student-t interval with Welch-Satterthwaite degrees of freedom and a two-sided Welch p-value, and
a ratio of marginal means has Fieller's interval with Welch-Satterthwaite degrees of freedom. NaN when
a cell has fewer than ``stats.MIN_RUNS_FOR_CI`` runs.
A response is analysed on the levels where every cell has it: acceptance is undefined without
speculation, so its effects are those of the speculative levels only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from specsweep.maths import stats
from specsweep.plan import design
from specsweep.plan.config import Configuration
from specsweep.record.results import Run

LOG_RESPONSES = ("decode_tok_s",)  # responses whose interactions are ratios of ratios (module doc)
RESPONSES = {"decode_tok_s": "client decode tok/s of each run", "acceptance_rate": "accepted / drafted of each run"}

SESSION, RUN = "session", "run"
ONE_SESSION_NOTE = (
    "one session per configuration: decode_tok_s effects are over runs of one launch (within-launch); "
    "launch-to-launch variation not measured (benchmark.sessions >= 2)"
)

COLUMNS: dict[str, str] = {
    "response": "decode_tok_s (client decode tokens/s) or acceptance_rate (accepted / drafted), per run",
    "unit": "the replicate of the interval and test: session (decode_tok_s with >= 2 sessions in every cell: "
    "each session's mean log rate, one spread pooled over the cells) or run (acceptance_rate; decode_tok_s "
    "with one session per configuration: within-launch)",
    "term": "main (one factor) or interaction (two factors)",
    "factor": "the factor, or the two factors of an interaction joined by ' x '",
    "level": "the level compared with the reference level (interaction: one level of each factor, ' x ')",
    "reference": "the reference level: the factor's baseline level, else its first (interaction: both)",
    "estimate": "main: mean difference level - reference, averaged over the other factors' levels; "
    "interaction: difference of differences, of log tok/s for tok_s (0 when the effects multiply), of the "
    "response for acceptance_rate (0 when they add up)",
    "ci95_low": "95 % Student-t interval of the estimate (Welch-Satterthwaite df), lower bound",
    "ci95_high": "95 % Student-t interval of the estimate, upper bound",
    "p_value": "two-sided t-test of estimate = 0 with those degrees of freedom (Welch); with identical runs in "
    "every cell (a deterministic response) the interval has zero width and p is 0, or empty for no effect",
    "df": "Welch-Satterthwaite degrees of freedom (unit run), or those of the pooled spread (unit session)",
    "ratio": "main: marginal mean at the level / marginal mean at the reference; tok_s interaction: the ratio "
    "of ratios exp(estimate) (1 when the effects multiply)",
    "ratio_ci95_low": "95 % interval of the ratio, lower bound (main: Fieller, Welch-Satterthwaite df; "
    "interaction: exp of the estimate's bounds)",
    "ratio_ci95_high": "95 % interval of the ratio, upper bound",
    "cells": "level combinations the contrast uses",
    "runs": "runs in those cells (all sessions)",
}


@dataclass(frozen=True)
class Cell:
    """The units of one level combination: mean, variance of the mean, units, and the runs behind them;
    ``df`` the degrees of freedom of a spread pooled over cells (NaN: the cell's own, Welch)."""

    mean: float
    var_mean: float
    n: int
    runs: int
    df: float = math.nan

    @classmethod
    def of(cls, values: Sequence[float]) -> Cell:
        data = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
        if len(data) < stats.MIN_RUNS_FOR_CI:
            return cls(float(data.mean()) if len(data) else math.nan, math.nan, len(data), len(data))
        if np.ptp(data) == 0:  # identical runs (greedy acceptance of one prompt): exactly no spread
            return cls(float(data[0]), 0.0, len(data), len(data))
        return cls(float(data.mean()), float(data.var(ddof=1) / len(data)), len(data), len(data))

    @staticmethod
    def pooled(units: Mapping[Any, tuple[Sequence[float], int]]) -> dict[Any, Cell]:
        """Cells of session units (key -> (values, runs behind them)) with one spread pooled over them."""
        squares = sum(float(((np.asarray(v) - np.mean(v)) ** 2).sum()) for v, _ in units.values())
        df = sum(len(v) - 1 for v, _ in units.values())
        variance = squares / df if df else math.nan
        return {key: Cell(float(np.mean(v)), variance / len(v), len(v), runs, df) for key, (v, runs) in units.items()}


@dataclass(frozen=True)
class Contrast:
    estimate: float
    ci_low: float
    ci_high: float
    p_value: float
    df: float


def contrast(cells: Sequence[Cell], weights: Sequence[float]) -> Contrast:
    """Σ w·mean with its Student-t interval (Welch-Satterthwaite df) and two-sided p-value."""
    # fsum: cells that cancel (the same mean with weights +w and -w) cancel exactly, whatever the order
    estimate = math.fsum(w * c.mean for w, c in zip(weights, cells, strict=True))
    parts = [w * w * c.var_mean for w, c in zip(weights, cells, strict=True) if w]
    used = [c for w, c in zip(weights, cells, strict=True) if w]
    variance = sum(parts)
    if any(math.isnan(p) for p in parts):
        return Contrast(estimate, math.nan, math.nan, math.nan, math.nan)
    if variance == 0:  # identical runs in every cell: the estimate is exact (p as stats.welch_p_value gives it)
        return Contrast(estimate, estimate, estimate, math.nan if estimate == 0 else 0.0, math.nan)
    df = _pooled_df(used)
    if math.isnan(df):
        df = variance**2 / sum(p * p / (c.n - 1) for p, c in zip(parts, used, strict=True))
    half = _t(df) * math.sqrt(variance)
    t = estimate / math.sqrt(variance)
    return Contrast(estimate, estimate - half, estimate + half, 2 * float(_scipy().t.sf(abs(t), df)), df)


def fieller(
    numerator: Sequence[tuple[float, Cell]], denominator: Sequence[tuple[float, Cell]]
) -> tuple[float, float, float]:
    """Ratio of two independent weighted sums of cell means with Fieller's 95 % interval (Welch df at the
    point estimate, as stats.fieller_ratio_interval); NaN bounds when unbounded or a cell has too few runs."""
    mx = sum(w * c.mean for w, c in numerator)
    my = sum(w * c.mean for w, c in denominator)
    ratio = mx / my if my else math.nan
    px = [w * w * c.var_mean for w, c in numerator]
    py = [w * w * c.var_mean for w, c in denominator]
    vx, vy = sum(px), sum(py)
    if math.isnan(vx + vy) or math.isnan(ratio):
        return ratio, math.nan, math.nan
    spread = sum(p * p / (c.n - 1) for p, (_, c) in zip(px, numerator, strict=True)) + ratio**4 * sum(
        p * p / (c.n - 1) for p, (_, c) in zip(py, denominator, strict=True)
    )
    df = _pooled_df([c for _, c in [*numerator, *denominator]])
    if math.isnan(df):
        df = (vx + ratio**2 * vy) ** 2 / spread if spread > 0 else math.inf
    t2 = _t(df) ** 2
    a = my * my - t2 * vy
    disc = (mx * my) ** 2 - a * (mx * mx - t2 * vx)
    if a <= 0 or disc < 0:
        return ratio, math.nan, math.nan
    root = math.sqrt(disc)
    return ratio, (mx * my - root) / a, (mx * my + root) / a


def _pooled_df(cells: Sequence[Cell]) -> float:
    """The degrees of freedom of the spread the cells share, or NaN when each has its own (Welch)."""
    found = {c.df for c in cells}
    return found.pop() if len(found) == 1 and not math.isnan(next(iter(found))) else math.nan


def _scipy() -> Any:
    from scipy import stats as scipy_stats

    return scipy_stats


def _t(df: float) -> float:
    return float(_scipy().t.ppf(0.5 + stats.CONFIDENCE / 2, df))


@dataclass(frozen=True)
class Crossing:
    """Factors (in order) with their levels (reference first) and the cell of each level combination."""

    factors: dict[str, list[str]]
    cells: dict[tuple[str, ...], Cell]
    # the cells on the log scale, for a response whose interactions are ratios (tok_s); None for additive ones
    log_cells: dict[tuple[str, ...], Cell] | None = None


def crossings(
    configurations: Mapping[str, Configuration],
) -> list[tuple[str, dict[str, list[str]], dict[tuple[str, ...], str]]]:
    """Each set of crossed factors: (description, levels of each factor reference first, cell -> configuration)."""
    groups: dict[tuple[str, ...], dict[tuple[str, ...], str]] = {}
    references: dict[str, str] = {}
    for configuration in configurations.values():
        if not configuration.levels:
            continue
        factors = tuple(configuration.levels)
        groups.setdefault(factors, {})[tuple(configuration.levels.values())] = configuration.name
        for factor in configuration.baseline_factors:
            references.setdefault(factor, configuration.levels[factor])
    found = []
    for factors, cells in groups.items():
        levels = {f: list(dict.fromkeys(key[i] for key in cells)) for i, f in enumerate(factors)}
        for factor, reference in references.items():
            if factor in levels:
                levels[factor].sort(key=lambda level, reference=reference: level != reference)
        found.append((" x ".join(factors), levels, cells))
    return found


def response_values(runs: Sequence[Run], response: str) -> list[float]:
    if response == "decode_tok_s":
        return [r.decode_tokens_per_s for r in runs]
    return [r.speculation.acceptance_rate for r in runs if r.speculation is not None and r.speculation.drafted]


def restrict(levels: dict[str, list[str]], cells: Mapping[tuple[str, ...], Cell]) -> dict[str, list[str]]:
    """The levels at which the response exists in some cell (acceptance: speculative levels only)."""
    return {
        f: [level for level in values if any(key[i] == level and cell.n > 0 for key, cell in cells.items())]
        for i, (f, values) in enumerate(levels.items())
    }


def estimate(crossing: Crossing) -> list[dict[str, Any]]:
    """Main effects of every factor and interactions of every pair, one row per non-reference level (pair)."""
    factors = list(crossing.factors)
    rows = []
    for i, factor in enumerate(factors):
        others = [crossing.factors[f] for f in factors if f != factor]
        reference = crossing.factors[factor][0]
        for level in crossing.factors[factor][1:]:
            combos = list(itertools.product(*others))
            at = [crossing.cells[_key(factors, factor, level, combo, i)] for combo in combos]
            ref = [crossing.cells[_key(factors, factor, reference, combo, i)] for combo in combos]
            weight = 1 / len(combos)
            result = contrast(at + ref, [weight] * len(at) + [-weight] * len(ref))
            ratio = fieller([(weight, c) for c in at], [(weight, c) for c in ref])
            rows.append(_row("main", factor, level, reference, result, ratio, at + ref))
    for (i, first), (j, second) in itertools.combinations(enumerate(factors), 2):
        rest = [k for k in range(len(factors)) if k not in (i, j)]
        combos = list(itertools.product(*(crossing.factors[factors[k]] for k in rest)))
        ref_a, ref_b = crossing.factors[first][0], crossing.factors[second][0]
        for a in crossing.factors[first][1:]:
            for b in crossing.factors[second][1:]:
                keys, weights = [], []
                for combo in combos:
                    for la, lb, sign in ((a, b, 1), (a, ref_b, -1), (ref_a, b, -1), (ref_a, ref_b, 1)):
                        key: list[str] = [""] * len(factors)
                        key[i], key[j] = la, lb
                        for k, level in zip(rest, combo, strict=True):
                            key[k] = level
                        keys.append(tuple(key))
                        weights.append(sign / len(combos))
                cells = [crossing.cells[key] for key in keys]
                ratio = (math.nan, math.nan, math.nan)
                if crossing.log_cells is not None:  # a ratio of ratios: the contrast of the logs
                    result = contrast([crossing.log_cells[key] for key in keys], weights)
                    ratio = (_exp(result.estimate), _exp(result.ci_low), _exp(result.ci_high))
                else:
                    result = contrast(cells, weights)
                rows.append(
                    _row("interaction", f"{first} x {second}", f"{a} x {b}", f"{ref_a} x {ref_b}", result, ratio, cells)
                )
    return rows


def _exp(value: float) -> float:
    return math.nan if math.isnan(value) else math.exp(value)


def _key(factors: list[str], factor: str, level: str, combo: tuple[str, ...], index: int) -> tuple[str, ...]:
    others = iter(combo)
    return tuple(level if k == index else next(others) for k in range(len(factors)))


def _row(
    term: str,
    factor: str,
    level: str,
    reference: str,
    result: Contrast,
    ratio: tuple[float, float, float],
    cells: list[Cell],
) -> dict[str, Any]:
    return {
        "term": term,
        "factor": factor,
        "level": level,
        "reference": reference,
        "estimate": result.estimate,
        "ci95_low": result.ci_low,
        "ci95_high": result.ci_high,
        "p_value": result.p_value,
        "df": result.df,
        "ratio": ratio[0],
        "ratio_ci95_low": ratio[1],
        "ratio_ci95_high": ratio[2],
        "cells": len({id(c) for c in cells}),
        "runs": sum({id(c): c.runs for c in cells}.values()),
    }


@dataclass(frozen=True)
class Analysis:
    """One response of one crossed design, on the levels where every cell has it."""

    factors: str
    response: str
    crossing: Crossing
    unit: str = RUN


def analyses(
    configurations: Mapping[str, Configuration], runs: Mapping[str, Sequence[Run]]
) -> tuple[list[Analysis], list[str]]:
    """Every crossed design and response that can be analysed, and notes on what could not."""
    sessions = {
        name: [found for s in names if (found := runs.get(s))]
        for name, names in design.sessions_of(configurations).items()
    }
    runs = design.merged_runs(configurations, dict(runs))
    configurations = design.measured_configurations(configurations)
    found, notes = [], []
    for described, levels, names in crossings(configurations):
        expected = math.prod(len(v) for v in levels.values())
        if len(names) < expected:
            notes.append(
                f"{described}: {len(names)} of {expected} level combinations configured; effects need "
                f"every combination (a full crossing)"
            )
            continue
        units = {key: session_units(sessions.get(name, [])) for key, name in names.items()}
        by_session = all(len(values) >= 2 for values, _ in units.values())
        if by_session:
            found.append(_by_session(described, levels, units))
        elif any(values for values, _ in units.values()):
            notes.append(f"{described}: {ONE_SESSION_NOTE}")
        for response in RESPONSES:
            if response == "decode_tok_s" and by_session:
                continue
            cells = {key: Cell.of(response_values(runs.get(name, []), response)) for key, name in names.items()}
            usable = {f: v for f, v in restrict(levels, cells).items() if len(v) >= 2}
            crossing = _collapse(levels, usable, cells) if usable else None
            if crossing is not None and response in LOG_RESPONSES:
                logs = {
                    key: Cell.of([math.log(v) for v in response_values(runs.get(name, []), response) if v and v > 0])
                    for key, name in names.items()
                }
                reduced = _collapse(levels, usable, logs)
                crossing = None if reduced is None else Crossing(crossing.factors, crossing.cells, reduced.cells)
            if crossing is None:
                notes.append(
                    f"{described}: {response} is missing in some level combination (or no factor has "
                    f"two levels with it); its effects are not estimated"
                )
                continue
            found.append(Analysis(described, response, crossing))
    return found, notes


def session_units(sessions: Sequence[Sequence[Run]]) -> tuple[list[float], int]:
    """Each session's mean log decode rate (sessions with a rate), and the runs behind them."""
    rates = [[v for v in response_values(runs, "decode_tok_s") if v and v > 0] for runs in sessions]
    return [float(np.mean(np.log(r))) for r in rates if r], sum(map(len, rates))


def _by_session(
    described: str, levels: dict[str, list[str]], units: Mapping[tuple[str, ...], tuple[list[float], int]]
) -> Analysis:
    """The tok/s analysis with sessions as the unit: log cells of the sessions' mean log rates, and cells of
    their exponentials (the marginal means and ratios), each with one pooled spread."""
    cells = Cell.pooled({key: ([math.exp(v) for v in values], runs) for key, (values, runs) in units.items()})
    crossing = Crossing(levels, cells, Cell.pooled(units))
    return Analysis(described, "decode_tok_s", crossing, SESSION)


def table(found: Sequence[Analysis]) -> pd.DataFrame:
    """results/effects.csv: one row per main effect and per two-factor interaction of each analysis."""
    rows = [{"response": a.response, "unit": a.unit, **row} for a in found for row in estimate(a.crossing)]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _collapse(
    levels: dict[str, list[str]], usable: dict[str, list[str]], cells: Mapping[tuple[str, ...], Cell]
) -> Crossing | None:
    """The design on the usable levels; a factor left with one level is held at it (not a factor any more)."""
    factors = list(levels)
    kept = [f for f in factors if f in usable]
    fixed = {
        f: [level for level in levels[f] if any(key[factors.index(f)] == level and c.n for key, c in cells.items())]
        for f in factors
        if f not in usable
    }
    if any(len(v) != 1 for v in fixed.values()):
        return None
    reduced: dict[tuple[str, ...], Cell] = {}
    for key, cell in cells.items():
        if all(key[factors.index(f)] == v[0] for f, v in fixed.items()) and all(
            key[factors.index(f)] in usable[f] for f in kept
        ):
            if cell.n == 0:
                return None
            reduced[tuple(key[factors.index(f)] for f in kept)] = cell
    return Crossing(factors={f: usable[f] for f in kept}, cells=reduced)


def marginal_means(crossing: Crossing, rows: str, lines: str) -> dict[tuple[str, str], Contrast]:
    """Mean of ``rows`` level x ``lines`` level over the other factors, with its 95 % interval (for the figure)."""
    factors = list(crossing.factors)
    found = {}
    for a in crossing.factors[rows]:
        for b in crossing.factors[lines]:
            chosen = [
                c
                for key, c in crossing.cells.items()
                if key[factors.index(rows)] == a and key[factors.index(lines)] == b
            ]
            if not chosen:  # rows == lines (one factor): only a == b exists
                continue
            found[(a, b)] = contrast(chosen, [1 / len(chosen)] * len(chosen))
    return found
