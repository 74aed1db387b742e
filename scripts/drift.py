"""Snakemake entry point; the logic lives in specsweep.steps.drift_report."""

from specsweep.steps import drift_report

drift_report(snakemake)  # noqa: F821 (injected by Snakemake)
