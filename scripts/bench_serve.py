"""Snakemake entry point; the logic lives in specsweep.report.benchserve."""

from specsweep.report.benchserve import write

write(
    snakemake.input.windows,  # noqa: F821
    list(snakemake.params.configurations),  # noqa: F821
    snakemake.output[0],  # noqa: F821
    snakemake.output[1],  # noqa: F821
    dict(snakemake.params.meta),  # noqa: F821
    dict(snakemake.params.slo),  # noqa: F821
)
