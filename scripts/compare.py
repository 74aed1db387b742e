"""Snakemake entry point; the logic lives in specsweep.steps.compare_results."""

from specsweep.steps import compare_results

compare_results(snakemake)  # noqa: F821 (injected by Snakemake)
