rule bench:
    input:
        engine=engine_record,
        models=models_of,
        prompts=BENCH["prompts"],
        after=runs_before,
    output:
        launch="results/{cfg}/launch.json",
        log="results/{cfg}/server.log",
        runs=expand("results/{{cfg}}/runs/run_{i}.json", i=RUNS),
        windows=expand(
            "results/{{cfg}}/load/{level}/window_{w}.json",
            level=LOAD_LABELS,
            w=WINDOWS,
        ),
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
