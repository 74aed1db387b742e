"""Snakemake entry point; the logic lives in specsweep.jobs.sequential_round."""

from specsweep.jobs import sequential_round

sequential_round(snakemake)  # noqa: F821 (injected by Snakemake)
