"""Snakemake entry point; the logic lives in specsweep.jobs.bench_configuration."""

from specsweep.jobs import bench_configuration

bench_configuration(snakemake)  # noqa: F821 (injected by Snakemake)
