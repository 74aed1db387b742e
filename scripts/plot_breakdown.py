"""Snakemake entry point; the logic lives in specsweep.jobs.plot_breakdown."""

from specsweep.jobs import plot_breakdown

plot_breakdown(snakemake)  # noqa: F821 (injected by Snakemake)
