"""Snakemake entry point; the logic lives in specsweep.steps.load_plots."""

from specsweep.steps import load_plots

load_plots(snakemake)  # noqa: F821 (injected by Snakemake)
