# benchmark.confirm_sessions: once summary.csv (and load.csv, with load levels) chose, the checkpoint records the
# choices; their sessions and their baselines' (<name>-c<k>) are bench jobs measured after it, whole sessions
# (runs and every load level), and their speedups alone are the published ones.
checkpoint confirm_choice:
    input:
        **({"load": results_tree.LOAD_TABLE} if LOAD_LEVELS else {}),
        summary=results_tree.SUMMARY,
    output:
        results_tree.CONFIRMATION_CHOICE,
    log:
        "logs/confirm/choice.log",
    conda:
        "../../envs/specsweep.yaml"
    script:
        "../../scripts/confirm_choice.py"


rule confirmation:
    input:
        choice=results_tree.CONFIRMATION_CHOICE,
        runs=confirmation_runs,
        windows=confirmation_windows,
    output:
        report(
            results_tree.CONFIRMATION,
            caption="../report/confirmation.rst",
            category="Summary",
        ),
    log:
        "logs/confirm/confirmation.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        sessions=BENCH["confirm_sessions"],
    script:
        "../../scripts/confirmation.py"
