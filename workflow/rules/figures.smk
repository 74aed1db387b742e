# Every figure of `all`; the cost model's curves are refitted from the run records.
rule figures:
    input:
        summary=results_tree.SUMMARY,
        runs=results_tree.RUNS_TABLE,
        run_records=run_files,
    output:
        throughput=report(
            results_tree.figure("throughput", "png"),
            caption="../report/throughput.rst",
            category="Figures",
        ),
        throughput_svg=results_tree.figure("throughput", "svg"),
        throughput_pdf=results_tree.figure("throughput", "pdf"),
        acceptance=report(
            results_tree.figure("acceptance", "png"),
            caption="../report/acceptance.rst",
            category="Figures",
        ),
        acceptance_svg=results_tree.figure("acceptance", "svg"),
        acceptance_pdf=results_tree.figure("acceptance", "pdf"),
        costmodel=report(
            results_tree.figure("costmodel", "png"),
            caption="../report/costmodel.rst",
            category="Figures",
        ),
        costmodel_svg=results_tree.figure("costmodel", "svg"),
        costmodel_pdf=results_tree.figure("costmodel", "pdf"),
        efficiency=report(
            results_tree.figure("efficiency", "png"),
            caption="../report/efficiency.rst",
            category="Figures",
        ),
        efficiency_svg=results_tree.figure("efficiency", "svg"),
        efficiency_pdf=results_tree.figure("efficiency", "pdf"),
    log:
        "logs/figures.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        configurations=measured_configurations,
    script:
        "../../scripts/plot.py"


# Only when a profile parser declares a `breakdown` (see common.smk breakdown_figures).
rule cycle_breakdown:
    input:
        summary=results_tree.SUMMARY,
    output:
        png=report(
            results_tree.figure("cycle_breakdown", "png"),
            caption="../report/cycle_breakdown.rst",
            category="Figures",
        ),
        svg=results_tree.figure("cycle_breakdown", "svg"),
        pdf=results_tree.figure("cycle_breakdown", "pdf"),
    log:
        "logs/cycle_breakdown.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        profile_parsers=config.get("profile_parsers", {}),
    script:
        "../../scripts/plot_breakdown.py"
