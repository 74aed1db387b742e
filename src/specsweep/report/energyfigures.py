"""Figures of what a token costs (deterministic, like figures.py): output tokens per joule against throughput,
with the efficiency frontier, and against load. Without measured energy each says why, in words."""

from __future__ import annotations

import textwrap

import pandas as pd

from specsweep.plan.load_levels import CONCURRENCY, REQUEST_RATE
from specsweep.record.rates import SINGLE_REQUEST_DECODE
from specsweep.report.figures import plt, sns  # the Agg backend and the deterministic SVG settings
from specsweep.report.loadfigures import KIND_LABELS, _errors

PER_JOULE = "output tokens per joule\n(95 % Student-t CI)"


def frontier(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the Pareto-efficient points (throughput, tokens per joule; higher is better in both): no
    other point is at least as good in both and better in one. Ordered by throughput."""
    efficient = [
        i
        for i, (x, y) in enumerate(points)
        if not any((a >= x and b >= y) and (a > x or b > y) for j, (a, b) in enumerate(points) if j != i)
    ]
    return sorted(efficient, key=lambda i: points[i][0])


def _not_measured(axes: plt.Axes, table: pd.DataFrame) -> None:
    why = next(iter(table.get("energy_source", pd.Series(dtype=str)).dropna()), "not measured")
    axes.text(
        0.5,
        0.5,
        textwrap.fill(f"energy {why}" if why.startswith("not") else why, 60),
        ha="center",
        va="center",
        transform=axes.transAxes,
    )
    axes.set_xticks([])
    axes.set_yticks([])


def _measured(table: pd.DataFrame) -> pd.DataFrame:
    if "tokens_per_joule_mean" not in table:
        return table.iloc[0:0]
    return table[pd.to_numeric(table["tokens_per_joule_mean"], errors="coerce").notna()]


def efficiency(summary: pd.DataFrame) -> plt.Figure:
    """Tokens per joule against decode tok/s per configuration, the efficiency frontier joined."""
    sns.set_theme(style="whitegrid", context="notebook")
    figure, axes = plt.subplots(figsize=(7.5, 5))
    measured = _measured(summary)
    axes.set_title("Efficiency frontier: output tokens per joule against throughput")
    if measured.empty:
        _not_measured(axes, summary)
        return figure
    x = measured["decode_tok_s_mean"].astype(float).to_numpy()
    y = measured["tokens_per_joule_mean"].astype(float).to_numpy()
    axes.errorbar(
        x,
        y,
        xerr=_errors(measured, "decode_tok_s_mean", "decode_tok_s_ci95_low", "decode_tok_s_ci95_high"),
        yerr=_errors(measured, "tokens_per_joule_mean", "tokens_per_joule_ci95_low", "tokens_per_joule_ci95_high"),
        fmt="none",
        ecolor="0.6",
        capsize=3,
        zorder=2,
    )
    colors = ["tab:orange" if b else "tab:blue" for b in measured["baseline"].astype(bool)]
    axes.scatter(x, y, c=colors, s=50, zorder=3)
    best = frontier(list(zip(x.tolist(), y.tolist(), strict=True)))
    axes.plot(x[best], y[best], color="tab:green", linestyle="--", zorder=1, label="efficiency frontier")
    for name, xi, yi in zip(measured["configuration"], x, y, strict=True):
        axes.annotate(str(name), (xi, yi), xytext=(5, 5), textcoords="offset points", fontsize=8)
    axes.set_xlabel(f"{SINGLE_REQUEST_DECODE.label}, 95 % Student-t CI")
    axes.set_ylabel(PER_JOULE)
    axes.legend(
        fontsize=8, loc="best", title=f"energy: {'; '.join(sorted(set(measured['energy_source'])))}", title_fontsize=7
    )
    return figure


def load_efficiency(table: pd.DataFrame) -> plt.Figure:
    """Tokens per joule against load per configuration, a panel per load kind."""
    sns.set_theme(style="whitegrid", context="notebook")
    measured = _measured(table)
    kinds = [k for k in (CONCURRENCY, REQUEST_RATE) if k in set(table["load_kind"])] or [CONCURRENCY]
    figure, panels = plt.subplots(1, len(kinds), figsize=(6.5 * len(kinds), 4.5), squeeze=False)
    for axes, kind in zip(panels[0], kinds, strict=True):
        rows = measured[measured["load_kind"] == kind]
        if rows.empty:
            _not_measured(axes, table)
            continue
        for index, (name, group) in enumerate(rows.groupby("configuration", sort=False)):
            group = group.sort_values("load_value")
            axes.errorbar(
                group["load_value"],
                group["tokens_per_joule_mean"].astype(float),
                yerr=_errors(group, "tokens_per_joule_mean", "tokens_per_joule_ci95_low", "tokens_per_joule_ci95_high"),
                marker="o",
                capsize=4,
                color=f"C{index}",
                label=name,
            )
        if kind == CONCURRENCY:
            axes.set_xscale("log", base=2)
        values = sorted(set(rows["load_value"]))
        axes.set_xticks(values, [f"{v:g}" for v in values])
        axes.set_xlabel(KIND_LABELS[kind])
        axes.set_ylabel(PER_JOULE.replace("CI", "CI over windows"))
        axes.legend(fontsize=8)
    figure.suptitle("What a token costs under load")
    figure.tight_layout()
    return figure
