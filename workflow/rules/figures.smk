# Every figure of `all`; the cost model's curves are refitted from the run records.
rule figures:
    input:
        summary="results/summary.csv",
        runs="results/runs.csv",
        run_records=run_files,
    output:
        throughput=report(
            "results/figures/throughput.png",
            caption="../report/throughput.rst",
            category="Figures",
        ),
        throughput_svg="results/figures/throughput.svg",
        throughput_pdf="results/figures/throughput.pdf",
        acceptance=report(
            "results/figures/acceptance.png",
            caption="../report/acceptance.rst",
            category="Figures",
        ),
        acceptance_svg="results/figures/acceptance.svg",
        acceptance_pdf="results/figures/acceptance.pdf",
        costmodel=report(
            "results/figures/costmodel.png",
            caption="../report/costmodel.rst",
            category="Figures",
        ),
        costmodel_svg="results/figures/costmodel.svg",
        costmodel_pdf="results/figures/costmodel.pdf",
    log:
        "logs/figures.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        configurations=all_configurations,
    script:
        "../../scripts/plot.py"


# Only when a profile parser declares a `breakdown` (see common.smk breakdown_figures).
rule cycle_breakdown:
    input:
        summary="results/summary.csv",
    output:
        png=report(
            "results/figures/cycle_breakdown.png",
            caption="../report/cycle_breakdown.rst",
            category="Figures",
        ),
        svg="results/figures/cycle_breakdown.svg",
        pdf="results/figures/cycle_breakdown.pdf",
    log:
        "logs/cycle_breakdown.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        profile_parsers=config.get("profile_parsers", {}),
    script:
        "../../scripts/plot_breakdown.py"
