"""Snakemake entry point; the logic lives in specsweep.steps.sweep_provenance."""

from specsweep.steps import sweep_provenance

sweep_provenance(snakemake)  # noqa: F821 (injected by Snakemake)
