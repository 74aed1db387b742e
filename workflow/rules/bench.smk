rule bench:
    input:
        engine=engine_record,
        models=models_of,
        prompts=BENCH["prompts"],
        after=runs_before,
    output:
        launch=results_tree.launch_file("{cfg}"),
        log=results_tree.server_log("{cfg}"),
        runs=[results_tree.run_file("{cfg}", i) for i in RUNS],
        windows=[
            results_tree.window_file("{cfg}", label, w)
            for label in LOAD_LABELS
            for w in WINDOWS
        ],
    log:
        "logs/bench/{cfg}.log",
    priority: bench_priority
    retries: 0
    conda:
        "../../envs/specsweep.yaml"
    resources:
        measuring=1,
    params:
        configuration=configuration_params,
        engine=engine_params,
        benchmark=BENCH_IDENTITY,
    script:
        "../../scripts/bench_configuration.py"
