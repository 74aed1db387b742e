# Code, machine, engine and models of every configuration and of the sweep, in one job:
# results/{cfg}/provenance.json and results/provenance.json (format: docs/provenance.md).
rule provenance:
    input:
        launches=per_configuration("results/{cfg}/launch.json"),
        engines=ENGINE_RECORDS,
        models=MODEL_RECORDS,
    output:
        sweep=report(
            "results/provenance.json",
            caption="../report/provenance.rst",
            category="Provenance",
        ),
        configurations=per_configuration("results/{cfg}/provenance.json"),
    log:
        "logs/provenance.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        config=config_identity,
        sources=RECORD_SOURCES,
    script:
        "../../scripts/sweep_provenance.py"
