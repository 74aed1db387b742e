"""Snakemake entry point; the logic lives in specsweep.jobs.confirm_choice."""

from specsweep.jobs import confirm_choice

confirm_choice(snakemake)  # noqa: F821 (injected by Snakemake)
