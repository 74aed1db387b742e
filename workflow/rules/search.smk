# The search (analyse/search.py): where one speculative flag is swept in numbers, the next values worth
# measuring at each level (single request, and every load level) and the next round as a config fragment.
rule search:
    input:
        **({"load": results_tree.LOAD_TABLE} if LOAD_LEVELS else {}),
        summary=results_tree.SUMMARY,
        runs=run_files,
    output:
        next_values=results_tree.NEXT_VALUES,
        next_round=results_tree.NEXT_ROUND,
    log:
        "logs/search.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        configurations=measured_configurations,
        # the sweep's own --configfile values, for the next round's command in the job's log
        config_files=list(workflow.overwrite_configfiles),
    script:
        "../../scripts/search.py"
