"""Snakemake entry point; the logic lives in specsweep.steps.write_paper."""

from specsweep.steps import write_paper

write_paper(snakemake)  # noqa: F821 (injected by Snakemake)
