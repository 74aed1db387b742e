# Load levels and prompt categories (benchmark.load, benchmark.prompts): every request as a row,
# per-level and per-category tables, then their figures. The load table and figures exist only with
# benchmark.load; the category table and figure always (a plain prompt file is one category).
LOAD_TABLE_OUTPUTS = {
    "requests": "results/requests.csv",
    "categories": "results/categories.csv",
    **({"load": "results/load.csv"} if LOAD_LEVELS else {}),
}
LOAD_FIGURE_OUTPUTS = {
    "categories": "results/figures/categories.png",
    "categories_svg": "results/figures/categories.svg",
    **(
        {
            "speedup": "results/figures/load_speedup.png",
            "speedup_svg": "results/figures/load_speedup.svg",
            "latency": "results/figures/load_latency.png",
            "latency_svg": "results/figures/load_latency.svg",
        }
        if LOAD_LEVELS
        else {}
    ),
}


rule load_tables:
    input:
        runs=run_files,
        windows=window_files,
    output:
        **LOAD_TABLE_OUTPUTS,
    log:
        "logs/load_tables.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        configurations=all_configurations,
        slo=BENCH.get("load", {}).get("slo", {}),
    script:
        "../../scripts/load_tables.py"


rule load_figures:
    input:
        **LOAD_TABLE_OUTPUTS,
    output:
        **LOAD_FIGURE_OUTPUTS,
    log:
        "logs/load_figures.log",
    conda:
        "../../envs/specsweep.yaml"
    script:
        "../../scripts/load_plots.py"
