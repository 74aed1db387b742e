# Every table of the sweep in one job (one Python start instead of one per table and per
# configuration; issue 7): server logs -> results/{cfg}/profile.csv, runs -> summary.csv,
# runs.csv, drift.csv (bracketing), paper/ (LaTeX macros and table), the cost model's tables.
rule summary:
    input:
        runs=run_files,
        launches=per_configuration("results/{cfg}/launch.json"),
        server_logs=per_configuration("results/{cfg}/server.log"),
    output:
        summary=report(
            "results/summary.csv",
            caption="../report/summary.rst",
            category="Summary",
        ),
        runs=report(
            "results/runs.csv",
            caption="../report/runs.rst",
            category="Summary",
        ),
        profiles=per_configuration("results/{cfg}/profile.csv"),
        drift=report(
            "results/drift.csv",
            caption="../report/drift.rst",
            category="Summary",
        ),
        macros=report(
            "results/paper/macros.tex",
            caption="../report/macros.rst",
            category="Paper",
        ),
        table=report(
            "results/paper/summary_table.tex",
            caption="../report/summary_table.rst",
            category="Paper",
        ),
        costmodel="results/costmodel.csv",
        costmodel_parameters="results/costmodel_parameters.csv",
        costmodel_report=report(
            "results/costmodel.md",
            caption="../report/costmodel_report.rst",
            category="Cost model",
        ),
    log:
        "logs/summary.log",
    conda:
        "../../envs/specsweep.yaml"
    # chunked logs (SGLang, vLLM) are parsed by one process per thread: --cores N speeds up large logs
    threads: SUMMARY_THREADS
    params:
        configurations=all_configurations,
        log_formats=SERVER_LOG_FORMATS,
        profile_parsers=config.get("profile_parsers", {}),
        warmup_requests=BENCH["warmup_requests"],
        macro_prefix=config["paper"]["macro_prefix"],
    script:
        "../../scripts/summarise.py"
