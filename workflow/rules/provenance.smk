rule configuration_provenance:
    input:
        launch="results/{cfg}/launch.json",
        engine=engine_record,
        models=models_of,
    output:
        "results/{cfg}/provenance.json",
    log:
        "logs/provenance/{cfg}.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        config_sha256=CONFIG_SHA256,
    script:
        "../../scripts/configuration_provenance.py"


rule provenance:
    input:
        expand("results/{cfg}/provenance.json", cfg=CONFIGURATIONS),
    output:
        report(
            "results/provenance.json",
            caption="../report/provenance.rst",
            category="Provenance",
        ),
    log:
        "logs/provenance/sweep.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        config=redacted_config,
    script:
        "../../scripts/sweep_provenance.py"
