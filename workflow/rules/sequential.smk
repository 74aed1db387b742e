# benchmark.sessions: {min, max}: after sessions 1..r, the checkpoint of round r decides which configurations get
# session r + 1 (analyse/sequential.py); measured_sessions (common.smk) follows the checkpoints.
checkpoint sequential_round:
    input:
        runs=round_runs,
    output:
        results_tree.sequential_round("{r}"),
    log:
        "logs/sequential/round_{r}.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        sessions=SESSION_NAMES,
        baseline=SEQUENTIAL_BASELINE,
    script:
        "../../scripts/sequential_round.py"
