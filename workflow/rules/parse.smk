rule parse_log:
    input:
        log="results/{cfg}/server.log",
    output:
        "results/{cfg}/profile.csv",
    params:
        kind=kind_of,
        warmup_requests=BENCH["warmup_requests"],
    log:
        "logs/parse/{cfg}.log",
    script:
        "../../scripts/parse_log.py"
