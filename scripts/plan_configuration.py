"""Snakemake entry point; the logic lives in specsweep.jobs.plan_configuration."""

from specsweep.jobs import plan_configuration

plan_configuration(snakemake)  # noqa: F821 (injected by Snakemake)
