"""Snakemake entry point; the logic lives in specsweep.steps.check_rebuild."""

from specsweep.steps import check_rebuild

check_rebuild(snakemake)  # noqa: F821 (injected by Snakemake)
