# Load levels and prompt categories (benchmark.load, benchmark.prompts): every request as a row,
# per-level and per-category tables, then their figures. The load table and figures exist only with
# benchmark.load; the category table and figure always (a plain prompt file is one category).
LOAD_TABLE_OUTPUTS = {
    "requests": results_tree.REQUESTS_TABLE,
    "categories": results_tree.CATEGORIES_TABLE,
    **(
        {"load": results_tree.LOAD_TABLE, "schedule": results_tree.SPECULATION_SCHEDULE}
        if LOAD_LEVELS
        else {}
    ),
    **({"slo_rate": results_tree.SLO_RATE_TABLE} if RATE_SEARCH else {}),
}
LOAD_FIGURE_OUTPUTS = {
    "categories": results_tree.figure("categories", "png"),
    "categories_svg": results_tree.figure("categories", "svg"),
    "categories_pdf": results_tree.figure("categories", "pdf"),
    **(
        {
            "speedup": results_tree.figure("load_speedup", "png"),
            "speedup_svg": results_tree.figure("load_speedup", "svg"),
            "speedup_pdf": results_tree.figure("load_speedup", "pdf"),
            "latency": results_tree.figure("load_latency", "png"),
            "latency_svg": results_tree.figure("load_latency", "svg"),
            "latency_pdf": results_tree.figure("load_latency", "pdf"),
            "efficiency": results_tree.figure("load_efficiency", "png"),
            "efficiency_svg": results_tree.figure("load_efficiency", "svg"),
            "efficiency_pdf": results_tree.figure("load_efficiency", "pdf"),
        }
        if LOAD_LEVELS
        else {}
    ),
}


# What the HTML report (snakemake --report) shows of them: caption (workflow/report/) and category.
REPORTED_TABLES = {
    "load": ("load.rst", "Load"),
    "categories": ("categories_table.rst", "Categories"),
}
REPORTED_FIGURES = {
    "speedup": ("load_speedup.rst", "Load"),
    "latency": ("load_latency.rst", "Load"),
    "categories": ("categories.rst", "Categories"),
}


rule load_tables:
    input:
        runs=run_files,
        windows=window_files,
        searches=rate_search_files,
    output:
        **reported(LOAD_TABLE_OUTPUTS, REPORTED_TABLES),
    log:
        "logs/load_tables.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        configurations=measured_configurations,
        slo=BENCH.get("load", {}).get("slo", {}),
    script:
        "../../scripts/load_tables.py"


rule load_figures:
    input:
        **LOAD_TABLE_OUTPUTS,
    output:
        **reported(LOAD_FIGURE_OUTPUTS, REPORTED_FIGURES),
    log:
        "logs/load_figures.log",
    conda:
        "../../envs/specsweep.yaml"
    script:
        "../../scripts/load_plots.py"
