# The load levels in `vllm bench serve --save-result` field names (report/benchserve.py), with benchmark.load.


rule bench_serve:
    input:
        windows=window_files,
    output:
        results_tree.BENCH_SERVE,
    log:
        "logs/bench_serve.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        configurations=list(CONFIGURATIONS),
    script:
        "../../scripts/bench_serve.py"
