rule summary:
    input:
        runs=run_files,
        launches=expand("results/{cfg}/launch.json", cfg=CONFIGURATIONS),
        profiles=expand("results/{cfg}/profile.csv", cfg=CONFIGURATIONS),
    output:
        summary=report(
            "results/summary.csv",
            caption="../report/summary.rst",
            category="Summary",
        ),
        runs="results/runs.csv",
    log:
        "logs/summary.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        configurations=all_configurations,
        profile_parsers=config.get("profile_parsers", {}),
    script:
        "../../scripts/summarise.py"
