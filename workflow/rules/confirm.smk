# benchmark.confirm_sessions: once summary.csv chose, the checkpoint records the choice; its sessions and its
# baseline's (<name>-c<k>) are bench jobs measured after it, and their speedup alone is the published one.
checkpoint confirm_choice:
    input:
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
