"""Snakemake entry point; the logic lives in specsweep.jobs.plot."""

from specsweep.jobs import plot

plot(snakemake)  # noqa: F821 (injected by Snakemake)
