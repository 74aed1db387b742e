"""Snakemake entry point; the logic lives in specsweep.jobs.load_tables."""

from specsweep.jobs import load_tables

load_tables(snakemake)  # noqa: F821 (injected by Snakemake)
