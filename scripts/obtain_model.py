"""Snakemake entry point; the logic lives in specsweep.jobs.obtain_model."""

from specsweep.jobs import obtain_model

obtain_model(snakemake)  # noqa: F821 (injected by Snakemake)
