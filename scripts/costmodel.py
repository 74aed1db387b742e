"""Snakemake entry point; the logic lives in specsweep.steps.cost_model."""

from specsweep.steps import cost_model

cost_model(snakemake)  # noqa: F821 (injected by Snakemake)
