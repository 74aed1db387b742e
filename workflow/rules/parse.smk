rule parse_log:
    input:
        log="results/{cfg}/server.log",
    output:
        "results/{cfg}/profile.csv",
    log:
        "logs/parse/{cfg}.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        kind=kind_of,
        log_format=log_format_of,
        profile_parsers=config.get("profile_parsers", {}),
        warmup_requests=BENCH["warmup_requests"],
    script:
        "../../scripts/parse_log.py"
