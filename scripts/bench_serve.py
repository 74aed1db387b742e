"""Snakemake entry point; the logic lives in specsweep.report.benchserve."""

from specsweep.report.benchserve import write

write(snakemake.input.windows, list(snakemake.params.configurations), snakemake.output[0])  # noqa: F821
