"""Snakemake entry point; the logic lives in specsweep.jobs.build_engine."""

from specsweep.jobs import build_engine

build_engine(snakemake)  # noqa: F821 (injected by Snakemake)
