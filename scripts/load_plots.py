"""Snakemake entry point; the logic lives in specsweep.jobs.load_plots."""

from specsweep.jobs import load_plots

load_plots(snakemake)  # noqa: F821 (injected by Snakemake)
