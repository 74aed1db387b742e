"""Snakemake entry point; the logic lives in specsweep.jobs.summarise."""

from specsweep.jobs import summarise

summarise(snakemake)  # noqa: F821 (injected by Snakemake)
