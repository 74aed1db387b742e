rule engine:
    output:
        results_tree.engine_record_file("{engine}"),
    log:
        "logs/engine/{engine}.log",
    conda:
        "../../envs/specsweep.yaml"
    resources:
        measuring=1,
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
