rule bench:
    input:
        engine=engine_record,
        models=models_of,
        prompts=BENCH["prompts"],
    output:
        launch="results/{cfg}/launch.json",
        log="results/{cfg}/server.log",
        runs=expand("results/{{cfg}}/runs/run_{i}.json", i=RUNS),
    params:
        configuration=configuration_params,
        engine=engine_params,
        benchmark=BENCH,
    log:
        "logs/bench/{cfg}.log",
    resources:
        measuring=1,
    retries: 0
    script:
        "../../scripts/bench_configuration.py"
