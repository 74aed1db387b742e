"""Snakemake entry point; the logic lives in specsweep.jobs.write_commands."""

from specsweep.jobs import write_commands

write_commands(snakemake)  # noqa: F821 (injected by Snakemake)
