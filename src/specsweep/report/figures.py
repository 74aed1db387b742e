"""Figures of a sweep, deterministic so that a rebuild gives identical files.

Determinism: the Agg backend, a fixed SVG hash salt, no dates in metadata, and a seeded
jitter for per-run points.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from specsweep.analyse.aggregate import runs_range
from specsweep.record.atomic import atomic_path
from specsweep.record.rates import SINGLE_REQUEST_DECODE
from specsweep.record.results import FIGURE_FORMATS

matplotlib.rcParams["svg.hashsalt"] = "specsweep"
METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}, "pdf": {"CreationDate": None}}


@dataclass(frozen=True)
class FigureFiles:
    """The figures job's PNG outputs (an SVG and a PDF are written beside each)."""

    throughput: str
    acceptance: str
    costmodel: str


def plot_sweep(
    summary: pd.DataFrame,
    runs: pd.DataFrame,
    configurations: dict[str, Any],
    run_records: dict[str, list[Any]],
    files: FigureFiles,
    progress: TextIO,
) -> None:
    """Every figure of ``all``: throughput, acceptance, and the cost model's curves, refitted from the run
    records (deterministic, milliseconds: the tables hold no curves)."""
    from specsweep.analyse import costmodel as cost

    save(throughput(summary, runs), Path(files.throughput).with_suffix(""))
    save(acceptance(summary), Path(files.acceptance).with_suffix(""))
    from specsweep.plan import design

    # every session of a configuration pooled, as the summary job's cost model (report/tables.py)
    model, text = cost.fit_or_reason(
        design.measured_configurations(configurations), design.merged_runs(configurations, run_records)
    )
    save(costmodel(model, text), Path(files.costmodel).with_suffix(""))
    print(f"figures written to {Path(files.throughput).parent}", file=progress)


def save_breakdown(summary: pd.DataFrame, profile_parsers: dict[str, Any], png: str, progress: TextIO) -> None:
    """The cycle breakdown of the first profile parser that declares one."""
    from specsweep.parsers.user import compile_parsers

    for parser in compile_parsers(profile_parsers):
        if parser.breakdown:
            unit = parser.units.get(parser.breakdown[0], "")
            save(cycle_breakdown(summary, parser.name, list(parser.breakdown), unit), Path(png).with_suffix(""))
            print(f"cycle breakdown of {parser.name}: {', '.join(parser.breakdown)}", file=progress)
            return


def save(figure: plt.Figure, stem: Path, formats: tuple[str, ...] = FIGURE_FORMATS) -> list[Path]:
    stem.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        path = stem.with_suffix(f".{fmt}")
        with atomic_path(path) as partial:  # format given explicitly: the temporary name has no suffix
            figure.savefig(partial, format=fmt, dpi=150, bbox_inches="tight", metadata=METADATA[fmt])
        written.append(path)
    plt.close(figure)
    return written


def throughput(summary: pd.DataFrame, runs: pd.DataFrame) -> plt.Figure:
    """Decode tok/s per configuration: mean with 95 % CI, every run as a dot, baseline as a line."""
    sns.set_theme(style="whitegrid", context="notebook")
    order = list(summary["configuration"])
    height = 1.2 + 0.55 * len(order)
    figure, axes = plt.subplots(figsize=(8, height))
    positions = {name: i for i, name in enumerate(order)}
    rng = np.random.default_rng(0)
    y = runs["configuration"].map(positions) + rng.uniform(-0.15, 0.15, len(runs))
    left_out = runs["excluded"].notna() if "excluded" in runs else pd.Series(False, index=runs.index)
    axes.scatter(runs.loc[~left_out, "decode_tok_s"], y[~left_out], s=14, color="0.55", zorder=2, label="single run")
    if left_out.any():  # kept in view, marked: not part of any statistic
        axes.scatter(
            runs.loc[left_out, "decode_tok_s"],
            y[left_out],
            s=20,
            color="tab:red",
            marker="x",
            zorder=2,
            label="excluded run (client and engine rates disagree)",
        )
    means = summary["decode_tok_s_mean"].to_numpy()
    colors = ["tab:orange" if b else "tab:blue" for b in summary["baseline"]]
    _interval_bars(
        axes,
        means,
        summary["decode_tok_s_ci95_low"],
        summary["decode_tok_s_ci95_high"],
        "95 % CI (sessions, log scale)",
        zorder=3,
    )
    axes.scatter(means, range(len(order)), s=60, c=colors, zorder=4, marker="D", label="mean")
    baseline = summary.loc[summary["baseline"], "decode_tok_s_mean"].iloc[0]
    axes.axvline(baseline, color="tab:orange", linestyle="--", zorder=1, label=f"baseline {baseline:.1f} tok/s")
    for i, (mean, pct, label) in enumerate(zip(means, summary["speedup_pct"], _verdicts(summary), strict=True)):
        axes.annotate(
            f"{pct:+.1f} %{label}", (mean, i), xytext=(0, 9), textcoords="offset points", ha="center", fontsize=8
        )
    axes.set_yticks(range(len(order)), order)
    axes.invert_yaxis()
    axes.set_xlabel(f"{SINGLE_REQUEST_DECODE.label}, client-measured, first token excluded")
    axes.set_ylabel("configuration")
    axes.set_title(
        f"Throughput per configuration ({runs_range(summary)} runs each; n.s.: not significant, Holm-adjusted)"
    )
    axes.legend(loc="lower right", fontsize=8, frameon=True)
    return figure


NOT_SIGNIFICANT = " (n.s.)"
NO_TEST = " (no test)"


def _verdicts(summary: pd.DataFrame) -> list[str]:
    """What follows a percent label: nothing when significant (Holm) or for a baseline, else n.s. / no test."""
    significant = summary["significant"] if "significant" in summary else pd.Series(None, index=summary.index)
    return [
        "" if bool(b) else "" if s is True or str(s) == "True" else NO_TEST if pd.isna(s) else NOT_SIGNIFICANT
        for b, s in zip(summary["baseline"], significant, strict=True)
    ]


def swept_axes(summary: pd.DataFrame) -> dict[str, str]:
    """Grid groups whose configurations differ in exactly one numeric parameter: group -> column."""
    parameters = [c for c in summary.columns if c.startswith("-") or c.startswith("env:")]
    found = {}
    for group, rows in summary.groupby("group", sort=False):
        varying = [c for c in parameters if rows[c].nunique(dropna=False) > 1]
        if len(rows) >= 2 and len(varying) == 1 and pd.api.types.is_numeric_dtype(rows[varying[0]]):
            found[str(group)] = varying[0]
    return found


def acceptance(summary: pd.DataFrame) -> plt.Figure:
    """Per speculative configuration: acceptance rate, accept length and speedup (top row); for each
    grid sweep over one numeric parameter: acceptance and speedup against that parameter (bottom row)."""
    sns.set_theme(style="whitegrid", context="notebook")
    spec = summary[summary["drafted"].notna() & (summary["drafted"] > 0)]
    sweeps = swept_axes(spec)
    rows = 2 if sweeps else 1
    figure, axes = plt.subplots(rows, 2, figsize=(11, 1.5 + 0.5 * max(len(spec), 1) + 3.5 * (rows - 1)), squeeze=False)
    rate_axes, speed_axes = axes[0]
    if spec.empty:
        rate_axes.text(
            0.5, 0.5, "no configuration drafted any token", ha="center", va="center", transform=rate_axes.transAxes
        )
    names = list(spec["configuration"])
    rate_axes.barh(names, spec["acceptance_rate"] * 100, color="tab:green")
    for i, length in enumerate(spec["accept_length"]):
        if pd.notna(length):
            rate_axes.annotate(
                f"accept len {length:.2f}",
                (1, i),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
                color="white",
            )
    rate_axes.set_xlabel("acceptance rate (% of drafted tokens accepted)")
    rate_axes.set_xlim(0, 100)
    rate_axes.set_ylabel("configuration")
    rate_axes.invert_yaxis()
    speed_axes.barh(names, spec["speedup"], color=["tab:blue" if s >= 1 else "tab:red" for s in spec["speedup"]])
    if "speedup_ci95_low" in spec and spec["speedup_ci95_low"].notna().any():
        speedup = spec["speedup"].to_numpy(dtype=float)
        _interval_bars(
            speed_axes, speedup, spec["speedup_ci95_low"], spec["speedup_ci95_high"], "95 % CI (sessions, log scale)"
        )
    speed_axes.sharey(rate_axes)
    speed_axes.tick_params(labelleft=False)
    speed_axes.axvline(1.0, color="tab:orange", linestyle="--", label="baseline")
    speed_axes.set_xlabel(f"speedup vs baseline (ratio of the {SINGLE_REQUEST_DECODE.name})")
    speed_axes.legend(loc="lower right", fontsize=8)
    if sweeps:
        _against_parameter(spec, sweeps, axes[1][0], axes[1][1])
    figure.suptitle("Speculation: how much of the draft is accepted, and what it buys")
    figure.tight_layout()
    return figure


def _against_parameter(spec: pd.DataFrame, sweeps: dict[str, str], rate_axes: plt.Axes, speed_axes: plt.Axes) -> None:
    for group, column in sweeps.items():
        rows = spec[spec["group"] == group].sort_values(column)
        label = f"{group} ({column})"
        rate_axes.plot(rows[column], rows["acceptance_rate"] * 100, marker="o", label=label)
        has_ci = "speedup_ci95_low" in rows and rows["speedup_ci95_low"].notna().any()
        error = (
            [rows["speedup"] - rows["speedup_ci95_low"], rows["speedup_ci95_high"] - rows["speedup"]]
            if has_ci
            else None
        )
        speed_axes.errorbar(rows[column], rows["speedup"], yerr=error, marker="o", capsize=4, label=label)
    axis_names = ", ".join(sorted(set(sweeps.values())))
    rate_axes.set_xlabel(f"swept parameter: {axis_names}")
    rate_axes.set_ylabel("acceptance rate (%)")
    rate_axes.set_ylim(0, 100)
    rate_axes.legend(fontsize=8)
    speed_axes.axhline(1.0, color="tab:orange", linestyle="--", label="baseline")
    speed_axes.set_xlabel(f"swept parameter: {axis_names}")
    speed_axes.set_ylabel("speedup vs baseline (95 % CI)")
    speed_axes.legend(fontsize=8)


def costmodel(model: Any, note: str = "") -> plt.Figure:
    """Measured tok/s against draft tokens per cycle, the fitted cost-model curve (95 % band), baseline.

    ``model`` None (not identifiable from this sweep): a figure that says so, with ``note``.
    """
    sns.set_theme(style="whitegrid", context="notebook")
    if model is None:
        figure, axes = plt.subplots(figsize=(7, 2))
        axes.axis("off")
        axes.text(0.5, 0.5, note.replace("# ", "").strip(), ha="center", va="center", wrap=True, fontsize=9)
        return figure
    groups = model.groups
    figure, axes_list = plt.subplots(1, max(len(groups), 1), figsize=(4.6 * max(len(groups), 1), 4.2), squeeze=False)
    table = model.table.set_index("configuration")
    for axes, group in zip(axes_list[0], groups, strict=False):
        axes.plot(group.curve_k, group.curve, color="tab:blue", label="model")
        if not np.isnan(group.curve_low).all():
            axes.fill_between(
                group.curve_k,
                group.curve_low,
                group.curve_high,
                color="tab:blue",
                alpha=0.15,
                label="95 % band (parameter uncertainty)",
            )
        members = table[table["group"] == group.name]
        axes.scatter(
            members["draft_tokens_per_cycle"],
            members["measured_tok_s"],
            color="black",
            zorder=3,
            label="measured (mean)",
        )
        for name, row in members.iterrows():
            axes.annotate(
                name,
                (row["draft_tokens_per_cycle"], row["measured_tok_s"]),
                xytext=(4, 4),
                textcoords="offset points",
                fontsize=7,
            )
        axes.axhline(model.baseline_tok_s, color="tab:orange", linestyle="--", label="baseline")
        axes.axvline(group.optimum_k, color="tab:green", linestyle=":", label=f"optimum {group.optimum_k:.1f}")
        axes.set_title(f"{group.name} (alpha {group.alpha:.3f})", fontsize=10)
        axes.set_xlabel("draft tokens per verify cycle")
        axes.set_ylim(bottom=0)
    axes_list[0][0].set_ylabel(SINGLE_REQUEST_DECODE.label)
    axes_list[0][0].legend(loc="lower right", fontsize=7)
    a, b = model.parameter("a"), model.parameter("b")
    figure.suptitle(
        f"Speculation cost model (fitted from counters and wall time): verify pass = "
        f"{1000 * a.value:.2f} ms + {1000 * b.value:.2f} ms/token",
        fontsize=10,
    )
    return figure


def _interval_bars(axes: plt.Axes, centers: np.ndarray, low: Any, high: Any, label: str, **style: Any) -> None:
    """Horizontal interval bars from ``low`` to ``high`` around ``centers``, one row each (none where NaN)."""
    below = centers - np.asarray(low, dtype=float)
    above = np.asarray(high, dtype=float) - centers
    axes.errorbar(
        centers,
        range(len(centers)),
        xerr=[np.nan_to_num(below), np.nan_to_num(above)],
        fmt="none",
        ecolor="black",
        capsize=4,
        label=label,
        **style,
    )


def comparison(
    frame: pd.DataFrame, before: str, after: str, empty_reason: str | None = None, note: str | None = None
) -> plt.Figure:
    """Per-configuration change of mean tok/s between two result sets, with 95 % Fieller CIs; with no
    compared configuration, the figure says why (``empty_reason``) instead of showing empty axes; ``note``
    (the machines of a comparison across machines) heads the title."""
    sns.set_theme(style="whitegrid", context="notebook")
    rows = frame[frame["status"] == "compared"]
    figure, axes = plt.subplots(figsize=(8, 1.4 + 0.5 * max(len(rows), 1)))
    if rows.empty:
        axes.text(
            0.5,
            0.5,
            textwrap.fill(empty_reason or "nothing compared", 70),
            ha="center",
            va="center",
            transform=axes.transAxes,
            fontsize=9,
        )
    names = list(rows["configuration"])
    delta = rows["delta_pct"].to_numpy(dtype=float)
    colors = ["tab:blue" if s else "0.6" for s in rows["significant"].eq(True)]
    axes.barh(names, delta, color=colors)
    percent = 100 * (rows[["ratio_ci95_low", "ratio_ci95_high"]].to_numpy(dtype=float) - 1)
    _interval_bars(axes, delta, percent[:, 0], percent[:, 1], "95 % CI (sessions, log scale)")
    for i, p in enumerate(rows["p_value"]):
        axes.annotate(f"p={p:.2g}", (0, i), xytext=(4, 8), textcoords="offset points", fontsize=7)
    axes.axvline(0, color="black", linewidth=0.8)
    axes.invert_yaxis()
    axes.set_xlabel(
        f"change of the mean {SINGLE_REQUEST_DECODE.name}, after vs before (%); blue = significant (Welch p < 0.05)"
    )
    head = f"{textwrap.fill(note, 110)}\n" if note else ""
    axes.set_title(f"{head}after: {after}\nbefore: {before}", fontsize=8)
    axes.legend(loc="lower right", fontsize=8)
    return figure


def cycle_breakdown(summary: pd.DataFrame, parser: str, parts: list[str], unit: str) -> plt.Figure:
    """Where a cycle's time goes: the mean of each part (a user profile parser's breakdown columns)
    stacked per configuration, labelled with each part's share of the cycle."""
    sns.set_theme(style="whitegrid", context="notebook")
    columns = [f"{parser}_{part}_mean" for part in parts]
    present = (
        summary[[c for c in columns if c in summary.columns]].notna().any(axis=1)
        if any(c in summary.columns for c in columns)
        else pd.Series(False, index=summary.index)
    )
    rows = summary[present]
    figure, axes = plt.subplots(figsize=(9, 1.5 + 0.5 * max(len(rows), 1)))
    if rows.empty:
        axes.text(
            0.5, 0.5, f"no configuration logged a {parser} line", ha="center", va="center", transform=axes.transAxes
        )
    names = list(rows["configuration"])
    left = np.zeros(len(rows))
    totals = np.nansum([rows[c].to_numpy(dtype=float) if c in rows else np.zeros(len(rows)) for c in columns], axis=0)
    palette = sns.color_palette("deep", len(parts))
    for part, column, color in zip(parts, columns, palette, strict=True):
        values = np.nan_to_num(rows[column].to_numpy(dtype=float)) if column in rows else np.zeros(len(rows))
        axes.barh(names, values, left=left, color=color, label=part)
        for i, (start, value, total) in enumerate(zip(left, values, totals, strict=True)):
            if value > 0 and total > 0:
                axes.annotate(
                    f"{100 * value / total:.0f} %",
                    (start + value / 2, i),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white",
                )
        left = left + values
    axes.set_xlabel(f"mean time per cycle ({unit})" if unit else "mean per cycle")
    axes.set_ylabel("configuration")
    axes.invert_yaxis()
    axes.legend(loc="lower right", fontsize=8)
    axes.set_title(f"Cycle breakdown from the {parser} profile lines")
    return figure


def interaction(found: list[Any]) -> plt.Figure:
    """Interaction plot of each analysed response (effects.Analysis): the mean at each level of one factor
    (x) for each level of another (lines), averaged over any further factors, with 95 % intervals
    (Student t, Welch-Satterthwaite df). Parallel lines: no interaction."""
    import itertools

    from specsweep.analyse.effects import RESPONSES, marginal_means

    panels = []
    for analysis in found:
        factors = list(analysis.crossing.factors)
        pairs = list(itertools.combinations(factors, 2)) or [(factors[0], factors[0])]
        panels += [(analysis, x, lines) for x, lines in pairs]
    columns = max(1, min(3, len(panels)))
    rows = max(1, -(-len(panels) // columns))
    figure, grid = plt.subplots(rows, columns, figsize=(4.5 * columns, 3.6 * rows), squeeze=False)
    for axes, (analysis, x, lines) in zip(grid.flat, panels, strict=False):
        levels = analysis.crossing.factors
        means = marginal_means(analysis.crossing, x, lines)
        positions = np.arange(len(levels[x]))
        for offset, line in enumerate(levels[lines] if lines != x else [None]):
            shown = [means[(level, line if line is not None else level)] for level in levels[x]]
            shift = 0.04 * (offset - (len(levels[lines]) - 1) / 2) if lines != x else 0.0
            axes.errorbar(
                positions + shift,
                [m.estimate for m in shown],
                yerr=[[m.estimate - m.ci_low for m in shown], [m.ci_high - m.estimate for m in shown]],
                marker="o",
                capsize=3,
                label=f"{lines}={line}" if line is not None else None,
            )
        axes.set_xticks(positions, levels[x])
        axes.set_xlabel(x)
        axes.set_ylabel(f"{analysis.response} (mean, 95 % CI)")
        axes.set_title(RESPONSES[analysis.response], fontsize=9)
        if lines != x:
            axes.legend(fontsize=8)
    for axes in list(grid.flat)[len(panels) :]:
        axes.set_visible(False)
    if not panels:
        grid.flat[0].set_visible(True)
        grid.flat[0].text(0.5, 0.5, "no crossed design with a full crossing", ha="center", va="center")
    figure.tight_layout()
    return figure
