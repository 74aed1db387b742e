"""Snakemake entry point; the logic lives in specsweep.jobs.write_effects."""

from specsweep.jobs import write_effects

write_effects(snakemake)  # noqa: F821 (injected by Snakemake)
