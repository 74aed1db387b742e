"""Snakemake entry point; the logic lives in specsweep.steps.write_effects."""

from specsweep.steps import write_effects

write_effects(snakemake)  # noqa: F821 (injected by Snakemake)
