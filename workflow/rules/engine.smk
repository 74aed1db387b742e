rule engine:
    output:
        "results/engine/{engine}.json",
    params:
        engine=engine_settings,
    log:
        "logs/engine/{engine}.log",
    resources:
        measuring=1,
    script:
        "../../scripts/build_engine.py"


rule model:
    output:
        "results/models/{model}.json",
    params:
        spec=model_spec,
    log:
        "logs/models/{model}.log",
    script:
        "../../scripts/obtain_model.py"
