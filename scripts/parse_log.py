"""Snakemake entry point; the logic lives in specsweep.steps.parse_log."""

from specsweep.steps import parse_log

parse_log(snakemake)  # noqa: F821 (injected by Snakemake)
