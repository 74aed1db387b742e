"""Snakemake entry point; the logic lives in specsweep.steps.plan_configuration."""

from specsweep.steps import plan_configuration

plan_configuration(snakemake)  # noqa: F821 (injected by Snakemake)
