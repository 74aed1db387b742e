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
    params:
        configurations=all_configurations,
    conda:
        "../../envs/specsweep.yaml"
    script:
        "../../scripts/drift.py"
