"""Snakemake entry point; the logic lives in specsweep.steps.bench_configuration."""

from specsweep.steps import bench_configuration

bench_configuration(snakemake)  # noqa: F821 (injected by Snakemake)
