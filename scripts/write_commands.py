"""Snakemake entry point; the logic lives in specsweep.steps.write_commands."""

from specsweep.steps import write_commands

write_commands(snakemake)  # noqa: F821 (injected by Snakemake)
