"""Snakemake entry point; the logic lives in specsweep.steps.verify_archive."""

from specsweep.steps import verify_archive

verify_archive(snakemake)  # noqa: F821 (injected by Snakemake)
