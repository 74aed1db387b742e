# `snakemake --cores 1 compare --config compare='{before: A, after: B}'`: A and B are two sweeps'
# results folders (or folders holding results/) or sweep archives (.tar.gz).
rule compare:
    input:
        before=compare_before,
        after=compare_after,
    output:
        table=results_tree.COMPARISON_TABLE,
        figure=report(
            results_tree.comparison_figure("png"),
            caption="../report/comparison.rst",
            category="Comparison",
        ),
        figure_svg=results_tree.comparison_figure("svg"),
        figure_pdf=results_tree.comparison_figure("pdf"),
    log:
        "logs/compare.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        match=lambda wildcards: config["compare"]["match"],
    script:
        "../../scripts/compare.py"
