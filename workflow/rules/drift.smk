rule drift:
    input:
        runs=run_files,
    output:
        report(
            "results/drift.csv",
            caption="../report/drift.rst",
            category="Summary",
        ),
    log:
        "logs/drift.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        configurations=all_configurations,
    script:
        "../../scripts/drift.py"
