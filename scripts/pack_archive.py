"""Snakemake entry point; the logic lives in specsweep.steps.pack_archive."""

from specsweep.steps import pack_archive

pack_archive(snakemake)  # noqa: F821 (injected by Snakemake)
