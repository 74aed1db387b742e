"""Snakemake entry point; the logic lives in specsweep.steps.plot_breakdown."""

from specsweep.steps import plot_breakdown

plot_breakdown(snakemake)  # noqa: F821 (injected by Snakemake)
