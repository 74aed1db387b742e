"""Snakemake entry point; the logic lives in specsweep.jobs.verify_archive."""

from specsweep.jobs import verify_archive

verify_archive(snakemake)  # noqa: F821 (injected by Snakemake)
