"""Snakemake entry point; the logic lives in specsweep.jobs.compare_results."""

from specsweep.jobs import compare_results

compare_results(snakemake)  # noqa: F821 (injected by Snakemake)
