"""Snakemake entry point; the logic lives in specsweep.jobs.sweep_provenance."""

from specsweep.jobs import sweep_provenance

sweep_provenance(snakemake)  # noqa: F821 (injected by Snakemake)
