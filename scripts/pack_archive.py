"""Snakemake entry point; the logic lives in specsweep.jobs.pack_archive."""

from specsweep.jobs import pack_archive

pack_archive(snakemake)  # noqa: F821 (injected by Snakemake)
