rule bench:
    input:
        engine=engine_record,
        models=models_of,
        prompts=BENCH["prompts"],
        after=runs_before,
        same_node=same_node_input,
    output:
        **(
            {"rate_search": results_tree.rate_search_file("{cfg}")}
            if RATE_SEARCH
            else {}
        ),
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
        # on a cluster (profiles/slurm): the engine's GPUs, cores, memory, time limit, whole node, no
        # requeue; with cluster.same_node the baseline's node
        gpu=measuring_resource("gpu"),
        cpus_per_task=measuring_resource("cpus_per_task"),
        mem_mb=measuring_resource("mem_mb"),
        runtime=measuring_resource("runtime"),
        slurm_extra=measuring_slurm_extra,
    params:
        configuration=configuration_params,
        engine=engine_params,
        benchmark=BENCH_IDENTITY,
    script:
        "../../scripts/bench_configuration.py"
