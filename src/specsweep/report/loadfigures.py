"""Figures of the load levels and prompt categories (deterministic, like figures.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from specsweep.analyse.loadsummary import PERCENTILE_INTERVAL, crossover, crossover_lines, verdicts_of
from specsweep.plan.load_levels import CONCURRENCY, REQUEST_RATE, SINGLE
from specsweep.record.rates import PER_REQUEST_DECODE, SINGLE_REQUEST_DECODE, STEADY_OUTPUT
from specsweep.report.figures import plt, sns  # the Agg backend and the deterministic SVG settings

KIND_LABELS = {
    CONCURRENCY: "concurrency (requests in flight, closed loop)",
    REQUEST_RATE: "request rate (requests/s, Poisson arrivals)",
}


def _errors(frame: pd.DataFrame, value: str, low: str, high: str) -> np.ndarray:
    """Error-bar lengths below and above (0 where an interval is missing)."""
    values = frame[value].astype(float).to_numpy()
    return np.nan_to_num(
        np.vstack([values - frame[low].astype(float).to_numpy(), frame[high].astype(float).to_numpy() - values])
    )


def load_speedup(table: pd.DataFrame) -> plt.Figure:
    """Speedup of steady output tok/s over the baseline's same windows at each level, 95 % paired interval,
    the crossover bracket shaded."""
    sns.set_theme(style="whitegrid", context="notebook")
    # a ramp (its rate changes within the window) is no point on a load axis: load.csv and bench_serve have it
    kinds = [k for k in (CONCURRENCY, REQUEST_RATE) if k in set(table["load_kind"])] or [CONCURRENCY]
    figure, panels = plt.subplots(1, len(kinds), figsize=(6.5 * len(kinds), 4.5), squeeze=False)
    speculative = table[~table["baseline"].astype(bool)]
    for axes, kind in zip(panels[0], kinds, strict=True):
        for index, (name, group) in enumerate(
            speculative[speculative["load_kind"] == kind].groupby("configuration", sort=False)
        ):
            group = group.sort_values("load_value")
            color = f"C{index}"
            axes.errorbar(
                group["load_value"],
                group["speedup"],
                yerr=_errors(group, "speedup", "speedup_ci95_low", "speedup_ci95_high"),
                marker="o",
                capsize=4,
                color=color,
                label=name,
            )
            found = crossover(
                group["load_value"].astype(float).tolist(),
                group["speedup_ci95_low"].astype(float).tolist(),
                group["speedup_ci95_high"].astype(float).tolist(),
                verdicts_of(group),
            )
            if found is not None:  # the bracket of levels whose intervals exclude 1 on opposite sides
                axes.axvspan(found.before, found.after, color=color, alpha=0.12)
                axes.annotate(
                    f"crosses 1 in {found.before:g}-{found.after:g}",
                    (found.before, 1.0),
                    xytext=(4, 8),
                    textcoords="offset points",
                    color=color,
                    fontsize=8,
                )
        axes.axhline(1.0, color="tab:orange", linestyle="--", label="baseline (no speculation)")
        if kind == CONCURRENCY:
            axes.set_xscale("log", base=2)
        values = sorted(set(table.loc[table["load_kind"] == kind, "load_value"]))
        axes.set_xticks(values, [f"{v:g}" for v in values])
        axes.set_xlabel(KIND_LABELS[kind])
        axes.set_ylabel(f"speedup of the {STEADY_OUTPUT.name}\n(95 % paired interval over windows)")
        axes.legend(fontsize=8, loc="upper right")
        # where each configuration crosses 1, in words (also when it does not in the measured range)
        axes.text(
            0.02,
            0.02,
            "\n".join(crossover_lines(table[table["load_kind"] == kind])),
            transform=axes.transAxes,
            fontsize=7,
            va="bottom",
            bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "0.8"},
        )
    figure.suptitle("Speculation under load: where the speedup crosses 1")
    figure.tight_layout()
    return figure


def load_latency(table: pd.DataFrame) -> plt.Figure:
    """Latency against throughput per configuration: one point per concurrency level (the capacity curve)."""
    sns.set_theme(style="whitegrid", context="notebook")
    figure, panels = plt.subplots(1, 2, figsize=(12, 4.5))
    for axes, metric, title in (
        (panels[0], "tpot_ms_p50", "TPOT median (ms)"),
        (panels[1], "e2el_ms_p90", "E2EL p90 (ms)"),
    ):
        for index, (name, group) in enumerate(table.groupby("configuration", sort=False)):
            group = group.sort_values(["load_kind", "load_value"])
            label = name
            for kind, marker in ((CONCURRENCY, "o"), (REQUEST_RATE, "s")):
                part = group[group["load_kind"] == kind]
                if part.empty:
                    continue
                axes.errorbar(
                    part["output_tok_s_mean"],
                    part[metric],
                    yerr=_errors(part, metric, f"{metric}_low", f"{metric}_high"),
                    marker=marker,
                    capsize=3,
                    color=f"C{index}",
                    linestyle="-" if kind == CONCURRENCY else "none",
                    label=label,
                )
                label = None  # one legend entry per configuration
                for _, row in part.iterrows():
                    axes.annotate(
                        row["load"],
                        (row["output_tok_s_mean"], row[metric]),
                        xytext=(4, 4),
                        textcoords="offset points",
                        fontsize=7,
                        color=f"C{index}",
                    )
        axes.set_xlabel(f"{STEADY_OUTPUT.label}, all requests, mean over windows")
        axes.set_ylabel(f"{title}\n95 % {PERCENTILE_INTERVAL} interval over the replicates")
        axes.legend(fontsize=8)
    figure.suptitle("Latency against throughput (c<N>: concurrency, r<R>: request rate)")
    figure.tight_layout()
    return figure


def categories(table: pd.DataFrame) -> plt.Figure:
    """Acceptance rate and speedup per prompt category, one request at a time (else the first load level)."""
    sns.set_theme(style="whitegrid", context="notebook")
    loads = list(dict.fromkeys(table["load"]))
    load = SINGLE if SINGLE in loads else (loads[0] if loads else SINGLE)
    shown = table[(table["load"] == load) & ~table["baseline"].astype(bool)]
    names = list(dict.fromkeys(shown["configuration"]))
    cats = list(dict.fromkeys(shown["category"]))
    figure, panels = plt.subplots(1, 2, figsize=(max(8.0, 1.3 * len(cats) * 2), 4.8))
    width = 0.8 / max(1, len(names))
    decode_rate = SINGLE_REQUEST_DECODE if load == SINGLE else PER_REQUEST_DECODE
    for axes, column, label in (
        (panels[0], "acceptance_rate", "acceptance rate (accepted / drafted)"),
        (panels[1], "speedup", f"speedup of the {decode_rate.name}"),
    ):
        for index, name in enumerate(names):
            mine = shown[shown["configuration"] == name].set_index("category").reindex(cats)
            positions = np.arange(len(cats)) + (index - (len(names) - 1) / 2) * width
            heights = mine[column].astype(float).to_numpy()
            errors = None
            if column == "speedup":
                errors = _errors(mine, "speedup", "speedup_ci95_low", "speedup_ci95_high")
            axes.bar(
                positions, np.nan_to_num(heights), width=width, color=f"C{index}", label=name, yerr=errors, capsize=2
            )
            if column == "acceptance_rate":  # an empty bar would read as 0 % accepted
                for position, height in zip(positions, heights, strict=True):
                    if np.isnan(height):
                        axes.annotate(
                            "no drafts",
                            (position, 0),
                            xytext=(0, 3),
                            textcoords="offset points",
                            ha="center",
                            rotation=90,
                            fontsize=7,
                            color=f"C{index}",
                        )
        if column == "speedup":
            axes.axhline(1.0, color="tab:orange", linestyle="--")
        axes.set_xticks(np.arange(len(cats)), cats, rotation=30, ha="right")
        axes.set_ylabel(label)
        axes.legend(fontsize=7)
    where = "one request at a time" if load == SINGLE else f"load {load}"
    figure.suptitle(f"Speculation by prompt category ({where})")
    figure.tight_layout()
    return figure
