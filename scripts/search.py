"""Snakemake entry point; the logic lives in specsweep.jobs.search_next."""

from specsweep.jobs import search_next

search_next(snakemake)  # noqa: F821 (injected by Snakemake)
