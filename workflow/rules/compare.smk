# `snakemake --cores 1 compare --config compare='{before: A, after: B}'`: A and B are two sweeps'
# results folders (or folders holding results/) or sweep archives (.tar.gz).
rule compare:
    input:
        before=compare_before,
        after=compare_after,
    output:
        table="results/compare/comparison.csv",
        figure=report(
            "results/compare/comparison.png",
            caption="../report/comparison.rst",
            category="Comparison",
        ),
        figure_svg="results/compare/comparison.svg",
        figure_pdf="results/compare/comparison.pdf",
    log:
        "logs/compare.log",
    params:
        match=lambda wildcards: config["compare"]["match"],
    conda:
        "../../envs/specsweep.yaml"
    script:
        "../../scripts/compare.py"
