# The load levels as `vllm bench serve --save-result` files, with their requests (report/benchserve.py), with
# benchmark.load.

from specsweep.report import benchserve


rule bench_serve:
    input:
        windows=window_files,
    output:
        results_tree.BENCH_SERVE,
        directory(results_tree.BENCH_SERVE_DIR),
    log:
        "logs/bench_serve.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        configurations=lambda wildcards: measured_sessions(),
        meta=lambda wildcards: benchserve.meta_of(
            config, {name: CONFIGURATIONS[name] for name in measured_sessions()}
        ),
        slo=(config["benchmark"].get("load") or {}).get("slo", {}),
    script:
        "../../scripts/bench_serve.py"
