"""Snakemake entry point; the logic lives in specsweep.steps.summarise."""

from specsweep.steps import summarise

summarise(snakemake)  # noqa: F821 (injected by Snakemake)
