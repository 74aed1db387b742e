"""Snakemake entry point; the logic lives in specsweep.jobs.rebuild_archive."""

from specsweep.jobs import rebuild_archive

rebuild_archive(snakemake)  # noqa: F821 (injected by Snakemake)
