"""Snakemake entry point; the logic lives in specsweep.jobs.check_rebuild."""

from specsweep.jobs import check_rebuild

check_rebuild(snakemake)  # noqa: F821 (injected by Snakemake)
