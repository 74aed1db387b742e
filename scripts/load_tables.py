"""Snakemake entry point; the logic lives in specsweep.steps.load_tables."""

from specsweep.steps import load_tables

load_tables(snakemake)  # noqa: F821 (injected by Snakemake)
