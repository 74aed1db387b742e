"""Snakemake entry point; the logic lives in specsweep.jobs.bench_serve."""

from specsweep.jobs import bench_serve

bench_serve(snakemake)  # noqa: F821 (injected by Snakemake)
