# See before you spend GPU time: resolved launches and a script of them; starts nothing,
# builds nothing, downloads nothing (so it runs on a laptop for a GPU campaign).
rule plan_configuration:
    output:
        results_tree.plan_file("{cfg}"),
    log:
        "logs/plan/{cfg}.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        configuration=configuration_params,
        engine=engine_params,
        models=config.get("models", {}),
    script:
        "../../scripts/plan_configuration.py"


# With the expected wall time of every session (plan/walltime.py), from the records results/ holds.
rule plan:
    input:
        plan_files,
    output:
        results_tree.COMMANDS,
    log:
        "logs/plan/commands.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        configurations=all_configurations,
        benchmark=USER_CONFIG.get("benchmark", {}),
        # the estimate rests on the sessions measured so far: a newer one rewrites it (never a measurement)
        measured=newest_launch_record,
    script:
        "../../scripts/write_commands.py"
