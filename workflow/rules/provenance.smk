# Code, machine, engine and models of every configuration and of the sweep, in one job:
# results/{cfg}/provenance.json and results/provenance.json (format: docs/provenance.md).
rule provenance:
    input:
        launches=per_fixed_session(results_tree.launch_file),
        engines=ENGINE_RECORDS,
        models=MODEL_RECORDS,
    output:
        sweep=report(
            results_tree.PROVENANCE,
            caption="../report/provenance.rst",
            category="Provenance",
        ),
        configurations=per_fixed_session(results_tree.configuration_provenance),
    log:
        "logs/provenance.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        config=config_identity,
        sources=RECORD_SOURCES,
    script:
        "../../scripts/sweep_provenance.py"
