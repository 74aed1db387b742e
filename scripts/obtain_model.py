"""Snakemake entry point; the logic lives in specsweep.steps.obtain_model."""

from specsweep.steps import obtain_model

obtain_model(snakemake)  # noqa: F821 (injected by Snakemake)
