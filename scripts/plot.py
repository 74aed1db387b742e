"""Snakemake entry point; the logic lives in specsweep.steps.plot."""

from specsweep.steps import plot

plot(snakemake)  # noqa: F821 (injected by Snakemake)
