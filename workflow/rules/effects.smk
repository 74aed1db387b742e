# Crossed factors only (config `factors`): each factor's effect and each two-factor interaction on
# tok/s and acceptance, with 95 % intervals, and the interaction plot.
rule effects:
    input:
        runs=run_files,
    output:
        table=report(
            results_tree.EFFECTS,
            caption="../report/effects.rst",
            category="Summary",
        ),
        figure=report(
            results_tree.figure("interaction", "png"),
            caption="../report/interaction.rst",
            category="Figures",
        ),
        svg=results_tree.figure("interaction", "svg"),
        pdf=results_tree.figure("interaction", "pdf"),
    log:
        "logs/effects.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        configurations=measured_configurations,
    script:
        "../../scripts/effects.py"
