"""Snakemake entry point; the logic lives in specsweep.jobs.confirmation."""

from specsweep.jobs import confirmation

confirmation(snakemake)  # noqa: F821 (injected by Snakemake)
