"""Snakemake entry point; the logic lives in specsweep.steps.configuration_provenance."""

from specsweep.steps import configuration_provenance

configuration_provenance(snakemake)  # noqa: F821 (injected by Snakemake)
