# Every table of the sweep in one job (one Python start instead of one per table and per
# configuration): server logs -> results/{cfg}/profile.csv, runs -> summary.csv,
# runs.csv, drift.csv (bracketing), paper/ (LaTeX macros and table), the cost model's tables.
rule summary:
    input:
        runs=run_files,
        launches=per_measured_session(results_tree.launch_file),
        server_logs=per_measured_session(results_tree.server_log),
    output:
        summary=report(
            results_tree.SUMMARY,
            caption="../report/summary.rst",
            category="Summary",
        ),
        runs=report(
            results_tree.RUNS_TABLE,
            caption="../report/runs.rst",
            category="Summary",
        ),
        profiles=per_fixed_session(results_tree.profile_file),
        drift=report(
            results_tree.DRIFT,
            caption="../report/drift.rst",
            category="Summary",
        ),
        macros=report(
            results_tree.PAPER_MACROS,
            caption="../report/macros.rst",
            category="Paper",
        ),
        table=report(
            results_tree.PAPER_TABLE,
            caption="../report/summary_table.rst",
            category="Paper",
        ),
        costmodel=results_tree.COSTMODEL,
        costmodel_parameters=results_tree.COSTMODEL_PARAMETERS,
        costmodel_report=report(
            results_tree.COSTMODEL_REPORT,
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
        configurations=measured_configurations,
        log_formats=SERVER_LOG_FORMATS,
        profile_parsers=config.get("profile_parsers", {}),
        warmup_requests=BENCH["warmup_requests"],
        macro_prefix=config["paper"]["macro_prefix"],
    script:
        "../../scripts/summarise.py"
