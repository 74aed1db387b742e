rule engine:
    output:
        results_tree.engine_record_file("{engine}"),
    log:
        "logs/engine/{engine}.log",
    conda:
        "../../envs/specsweep.yaml"
    resources:
        measuring=1,
        gpu=build_resource("gpu"),
        cpus_per_task=build_resource("cpus_per_task"),
        mem_mb=build_resource("mem_mb"),
        runtime=build_resource("runtime"),
    params:
        engine=engine_settings,
    script:
        "../../scripts/build_engine.py"


# Downloading, extracting and hashing a model must not overlap a measurement (--cores > 1).
rule model:
    output:
        results_tree.model_record_file("{model}"),
    log:
        "logs/models/{model}.log",
    conda:
        "../../envs/specsweep.yaml"
    resources:
        measuring=1,
    params:
        spec=model_spec,
    script:
        "../../scripts/obtain_model.py"
