"""Coverage of the load intervals, by simulation with a known truth: before (pooled bootstrap over every
window, first window included, numpy's inverted_cdf) and after (steady windows after a discarded warmup
window, vLLM's linear percentile, sectioning t-interval; paired speedup; crossover bracket).

    .venv/bin/python benchmarks/load_coverage.py [--trials N]     (a row of make bench)

The noise is the one the project documents: a window-to-window offset (3 % log-normal), a slow first
window of each level (+15 %, the warmup the earlier method kept), per-request effects (prompts: 20 %),
heavy-tailed TTFT and bursty speculative ITL (an event is a fast accepted draft or a slow verify step).
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from specsweep.analyse.latency import PERCENTILES, sectioned_percentiles
from specsweep.analyse.loadsummary import category_table, crossover, paired_speedup, with_verdicts
from specsweep.maths import stats
from specsweep.plan import design
from specsweep.plan.config import Configuration

WINDOW_OFFSET = 0.03
SLOW_FIRST = 1.15
REQUEST_EFFECT = 0.20
TOKENS = 32


def window_values(rng: np.random.Generator, requests: int, offset: float) -> dict[str, np.ndarray]:
    """One window's TTFT (s) per request and ITL gaps (s) of every request, scaled by the window's offset."""
    effect = np.exp(rng.normal(0, REQUEST_EFFECT, requests))
    ttft = offset * effect * 0.05 * rng.lognormal(0, 0.6, requests)
    verify = rng.random((requests, TOKENS)) < 0.3  # a slow verify step, else a fast accepted draft
    gaps = offset * effect[:, None] * np.where(verify, 0.030, 0.010) * rng.lognormal(0, 0.15, (requests, TOKENS))
    return {"ttft": ttft, "itl": gaps.ravel()}


def level(rng: np.random.Generator, windows: int, requests: int) -> tuple[dict, list[dict]]:
    """A level's warmup (slow first) window and its measured windows."""
    first = window_values(rng, requests, SLOW_FIRST * math.exp(rng.normal(0, WINDOW_OFFSET)))
    measured = [window_values(rng, requests, math.exp(rng.normal(0, WINDOW_OFFSET))) for _ in range(windows)]
    return first, measured


def truth(requests: int, seed: int = 99) -> dict[str, list[float]]:
    """The population percentiles of measured windows (many windows pooled)."""
    rng = np.random.default_rng(seed)
    many = [window_values(rng, requests, math.exp(rng.normal(0, WINDOW_OFFSET))) for _ in range(4000)]
    return {m: [float(np.percentile(np.concatenate([w[m] for w in many]), q)) for q in PERCENTILES] for m in many[0]}


def earlier_bootstrap(windows: list[np.ndarray], q: float, resamples: int, rng: np.random.Generator) -> tuple:
    """The earlier method: inverted_cdf percentile of all windows pooled, percentile bootstrap of whole windows."""
    estimates = []
    for _ in range(resamples):
        picks = rng.integers(0, len(windows), len(windows))
        estimates.append(np.percentile(np.concatenate([windows[i] for i in picks]), q, method="inverted_cdf"))
    return tuple(np.percentile(estimates, [2.5, 97.5]))


def percentile_coverage(trials: int, windows: int, requests: int, resamples: int = 200, seed: int = 1) -> dict:
    """Share of simulated levels whose 95 % interval holds the true percentile, per metric and percentile."""
    rng = np.random.default_rng(seed)
    true = truth(requests)
    before = {(m, q): 0 for m in true for q in PERCENTILES}
    after, approximate = dict(before), dict(before)
    for _ in range(trials):
        first, measured = level(rng, windows, requests)
        for metric, values in true.items():
            found = sectioned_percentiles([w[metric] for w in measured])
            everything = [first[metric]] + [w[metric] for w in measured]
            for q, value, result in zip(PERCENTILES, values, found, strict=True):
                low, high = earlier_bootstrap(everything, q, resamples, rng)
                before[metric, q] += low <= value <= high
                after[metric, q] += result.low <= value <= result.high
                approximate[metric, q] += result.approximate
    return {
        f"{m} p{q}": {
            "before": before[m, q] / trials,
            "after": after[m, q] / trials,
            "labelled_approximate": approximate[m, q] / trials,
        }
        for m, q in before
    }


def goodput_coverage(trials: int, windows: int, requests: int, concurrency: int = 4, seed: int = 2) -> dict:
    """Goodput per window (requests within a 120 ms TTFT SLO / window time), t-interval of its mean."""
    rng = np.random.default_rng(seed)

    def goodputs(count: int, first: bool = False) -> list[float]:
        found = []
        for w in range(count):
            offset = (SLOW_FIRST if first and w == 0 else 1.0) * math.exp(rng.normal(0, WINDOW_OFFSET))
            values = window_values(rng, requests, offset)
            duration = (values["ttft"].sum() + values["itl"].sum()) / concurrency
            found.append(float((values["ttft"] <= 0.12).sum() / duration))
        return found

    true = float(np.mean(goodputs(4000)))
    covered = {"before": 0, "after": 0}
    for _ in range(trials):
        with_first = goodputs(windows + 1, first=True)
        for name, sample in (("before", with_first), ("after", with_first[1:])):
            summary = stats.describe(sample)
            covered[name] += summary.ci_low <= true <= summary.ci_high
    return {k: v / trials for k, v in covered.items()}


def speedup_coverage(trials: int, windows: int, true_ratio: float = 0.8, seed: int = 3) -> dict:
    """Paired speedup over windows that share their prompts (a window effect of 10 %) and their noise (3 %)."""
    rng = np.random.default_rng(seed)
    covered = {"before (Fieller, independent)": 0, "after (paired)": 0}
    for _ in range(trials):
        prompts = np.exp(rng.normal(0, 0.10, windows))  # the same prompts for both configurations
        base = 100 * prompts * np.exp(rng.normal(0, WINDOW_OFFSET, windows))
        spec = 100 * true_ratio * prompts * np.exp(rng.normal(0, WINDOW_OFFSET, windows))
        low, high = stats.fieller_ratio_interval(spec, base)
        covered["before (Fieller, independent)"] += float(low) <= true_ratio <= float(high)
        paired = paired_speedup(dict(enumerate(spec)), dict(enumerate(base)))
        # the geometric-mean estimand: true_ratio by construction (the window effects cancel in each pair)
        covered["after (paired)"] += paired.low <= true_ratio <= paired.high
    return {k: v / trials for k, v in covered.items()}


def crossover_coverage(trials: int, windows: int, seed: int = 4) -> dict:
    """Speedup 1.6 at c1 falling as 1.6 * (c/1)^-0.25: crosses 1 at c = 6.55. Does the bracket hold it?"""
    rng = np.random.default_rng(seed)
    levels = [1, 2, 4, 8, 16, 32]
    crossing = 1.6**4
    held = resolved = 0
    points = []
    for _ in range(trials):
        lows, highs, ratios = [], [], []
        for c in levels:
            true = 1.6 * c**-0.25
            base = 100 * np.exp(rng.normal(0, 0.05, windows))
            spec = base * true * np.exp(rng.normal(0, 0.05, windows))
            paired = paired_speedup(dict(enumerate(spec)), dict(enumerate(base)))
            lows.append(paired.low)
            highs.append(paired.high)
            ratios.append(paired.ratio)
        found = crossover(levels, lows, highs)
        if found is not None:
            resolved += 1
            held += found.before <= crossing <= found.after
        # the earlier point estimate: linear interpolation where the point speedup falls through 1
        for (x0, y0), (x1, y1) in itertools.pairwise(zip(levels, ratios, strict=True)):
            if y0 >= 1 > y1:
                points.append(x0 + (1 - y0) * (x1 - x0) / (y1 - y0))
                break
    return {
        "true_crossing": crossing,
        "bracket_holds_truth": held / max(resolved, 1),
        "resolved": resolved / trials,
        "earlier_point_5_95": [float(np.percentile(points, 5)), float(np.percentile(points, 95))] if points else [],
    }


def across_launches(trials: int, launch_offset: float, sessions: int = 2, seed: int = 6) -> dict:
    """An A/A load sweep as config/examples/aa-load.yaml runs it, through the library's pairing and verdicts: a
    baseline and 3 identical configurations, 2 levels, ``sessions`` launches each (each launch its own log-normal
    offset), 2 windows per session (3 % each). Each session is a unit (the mean of its windows), paired with the
    baseline's session k (paired_speedup); the load table's Holm verdicts over all 6 rows (with_verdicts).
    Returns the speedup intervals' coverage of the true ratio 1 and the family-wise rate of any 'significant'."""
    rng = np.random.default_rng(seed)
    covered = tested = false_alarms = 0
    for _ in range(trials):
        rows = []
        for _level in range(2):
            launches = np.exp(rng.normal(0, launch_offset, (4, sessions)))  # row 0: the baseline's launches
            units = launches[:, :, None] * np.exp(rng.normal(0, WINDOW_OFFSET, (4, sessions, 2)))
            rates = 100 * units.mean(axis=2)
            for candidate in range(1, 4):
                found = paired_speedup(dict(enumerate(rates[candidate])), dict(enumerate(rates[0])))
                covered += found.low <= 1.0 <= found.high
                tested += 1
                rows.append({"baseline": False, "replicate": "session", "speedup_p_value": found.p_value})
        verdicts = with_verdicts(pd.DataFrame(rows))
        false_alarms += bool(verdicts["significant"].fillna(False).any())
    return {"coverage": covered / tested, "family_false_positives": false_alarms / trials, "trials": trials}


AA_NAMES = ("base", "a", "b", "c")
CATEGORY_EFFECTS = (0.8, 1.0, 1.25)  # a category's per-request decode rate relative to the mean


def _category_requests(
    rng: np.random.Generator, sessions: dict[str, list[str]], launch_offset: float, per_window: int
) -> pd.DataFrame:
    """requests.csv's columns category_table reads, one load level of an A/A sweep: each session its own
    launch offset, 2 windows (3 % each), ``per_window`` requests of each category with per-request effects."""
    rows = []
    for session in (s for names in sessions.values() for s in names):
        launch = math.exp(rng.normal(0, launch_offset))
        for window in range(2):
            offset = launch * math.exp(rng.normal(0, WINDOW_OFFSET))
            for category, effect in enumerate(CATEGORY_EFFECTS):
                rates = 50 * effect * offset * np.exp(rng.normal(0, REQUEST_EFFECT, per_window))
                rows += [
                    {"configuration": session, "window": window, "category": str(category), "decode_tok_s": r}
                    for r in rates
                ]
    frame = pd.DataFrame(rows).assign(load="c4", flagged=None, drafted=None, accepted=None, verify_steps=None)
    return frame


def category_across_launches(
    trials: int, launch_offset: float, sessions: int = 2, per_window: int = 8, seed: int = 7
) -> dict:
    """categories.csv's speedup intervals at load in an A/A sweep (a baseline and 3 identical configurations,
    3 categories, ``sessions`` launches each), through category_table: the share of intervals holding the true
    ratio 1, before (requests as samples: the Fieller interval of the ratio of their means) and after (sessions,
    paired with the baseline's, as load.csv's speedup)."""
    rng = np.random.default_rng(seed)
    base = {n: Configuration(n, "e", "llamacpp", n == "base", {}, {}, group=n) for n in AA_NAMES}
    configurations = design.with_sessions(base, sessions)
    of = design.sessions_of(configurations)
    before = after = cells = 0
    for _ in range(trials):
        requests = _category_requests(rng, of, launch_offset, per_window)
        table = category_table(configurations, requests)
        whole = requests.assign(configuration=requests["configuration"].map({s: n for n, ss in of.items() for s in ss}))
        for row in table[~table["baseline"].astype(bool)].itertuples():
            cells += 1
            after += row.speedup_ci95_low <= 1.0 <= row.speedup_ci95_high
            same = whole[whole["category"] == row.category]
            rates = [same.loc[same["configuration"] == n, "decode_tok_s"].tolist() for n in (row.configuration, "base")]
            ((_, ratio),) = stats.describe_many([rates[0]], rates[1], intervals=False)
            before += ratio.ci_low <= 1.0 <= ratio.ci_high
    return {"before": before / cells, "after": after / cells, "cells": cells}


def percentile_memory(windows: int = 5, requests: int = 1000, tokens: int = 2000) -> dict:
    """Peak memory of one ITL level's percentiles (tracemalloc), 5 windows x 1,000 requests x 2,000 gaps."""
    rng = np.random.default_rng(5)
    data = [rng.exponential(0.01, requests * tokens) for _ in range(windows)]
    tracemalloc.start()
    sectioned_percentiles(data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"values": windows * requests * tokens, "peak_mib": peak / 2**20}


def measure(trials: int = 400) -> dict:
    return {
        "percentiles_3_windows": percentile_coverage(trials, windows=3, requests=64),
        "percentiles_10_windows": percentile_coverage(trials, windows=10, requests=64),
        "goodput_3_windows": goodput_coverage(trials, windows=3, requests=64),
        "speedup_3_windows": speedup_coverage(4 * trials, windows=3),
        "crossover_3_windows": crossover_coverage(trials, windows=3),
        **{f"across_launches_{pct}": across_launches(8 * trials, pct / 100) for pct in (3, 10)},
        **{f"category_across_launches_{pct}": category_across_launches(trials, pct / 100) for pct in (3, 10)},
        "memory": percentile_memory(),
    }


def lines(result: dict) -> list[tuple[str, str, str]]:
    """(measure, figure, target) rows for make bench's table."""
    rows = []
    for key in ("percentiles_3_windows", "percentiles_10_windows"):
        windows = key.split("_")[1]
        for name, found in result[key].items():
            rows.append(
                (
                    f"load {name} 95 % coverage, {windows} windows: before -> after (approx.)",
                    f"{found['before']:.2f} -> {found['after']:.2f} ({found['labelled_approximate']:.0%})",
                    "0.95 ± 0.02",
                )
            )
    good = result["goodput_3_windows"]
    rows.append(
        (
            "load goodput 95 % coverage, 3 windows: before -> after",
            f"{good['before']:.2f} -> {good['after']:.2f}",
            "0.95 ± 0.02",
        )
    )
    speed = result["speedup_3_windows"]
    before, after = speed.values()
    rows.append(
        ("load speedup 95 % coverage, 3 windows: Fieller -> paired", f"{before:.2f} -> {after:.2f}", "0.95 ± 0.02")
    )
    cross = result["crossover_3_windows"]
    rows.append(
        (
            f"load crossover bracket holds c={cross['true_crossing']:.2f} (resolved in {cross['resolved']:.0%})",
            f"{cross['bracket_holds_truth']:.2f}",
            "≥ 0.95",
        )
    )
    for pct in (3, 10):
        found = result[f"across_launches_{pct}"]
        rows.append(
            (
                f"load speedup 95 % coverage, 2 sessions, {pct} % launch offsets (A/A)",
                f"{found['coverage']:.3f}",
                "0.95 ± 0.02",
            )
        )
        rate = found["family_false_positives"]
        error = math.sqrt(rate * (1 - rate) / found["trials"])  # the simulation's own standard error
        rows.append(
            (
                f"load A/A family-wise false positives (Holm, 3 x 2 rows), {pct} % launch offsets",
                f"{rate:.3f} ± {error:.3f}",
                "≤ 0.05",
            )
        )
    for pct in (3, 10):
        found = result[f"category_across_launches_{pct}"]
        rows.append(
            (
                f"load category speedup 95 % coverage, 2 sessions, {pct} % launch offsets (A/A): requests -> sessions",
                f"{found['before']:.3f} -> {found['after']:.3f}",
                "0.95 ± 0.02",
            )
        )
    memory = result["memory"]
    rows.append((f"load ITL percentiles, {memory['values']:,} values (peak MiB)", f"{memory['peak_mib']:.0f}", "< 100"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=400)
    args = parser.parse_args()
    for name, figure, target in lines(measure(args.trials)):
        print(f"{name:<72} {figure:>18} {target:>12}")


if __name__ == "__main__":
    main()
