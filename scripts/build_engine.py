"""Snakemake entry point; the logic lives in specsweep.steps.build_engine."""

from specsweep.steps import build_engine

build_engine(snakemake)  # noqa: F821 (injected by Snakemake)
