# specsweep: benchmark LLM inference-server configurations, reproducibly.
#
# For each named configuration in config/config.yaml: obtain the engine and model, launch the
# server, wait until ready, warm up, run N generations of max_tokens each, stop the server,
# then parse every log and aggregate every configuration into results/summary.csv and figures.
from snakemake.utils import min_version

min_version("9.0")


# A sweep given with --configfile replaces the default one; Snakemake would otherwise merge the
# two (engines and configurations of both), which is never what a separate sweep file means.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"  # validation, expanded configurations, helpers
include: "workflow/rules/engine.smk"  # build or locate the engine; obtain model files
include: "workflow/rules/bench.smk"  # one job per configuration: server session + runs
include: "workflow/rules/summary.smk"  # logs, runs -> profiles, summary, drift, paper, cost model
include: "workflow/rules/sequential.smk"  # benchmark.sessions {min, max}: a checkpoint per round
include: "workflow/rules/confirm.smk"  # the choice measured again in fresh sessions -> confirmation.csv
include: "workflow/rules/figures.smk"  # tables, runs -> results/figures/
include: "workflow/rules/search.smk"  # summary, load tables -> the swept flag's next values, next round
include: "workflow/rules/effects.smk"  # crossed factors -> results/effects.csv, interaction figure
include: "workflow/rules/load.smk"  # load windows, categories -> tables and figures
include: "workflow/rules/benchserve.smk"  # load windows -> results/bench_serve.json (vLLM's field names)
include: "workflow/rules/compare.smk"  # `compare` target: two result sets
include: "workflow/rules/provenance.smk"  # code, machine, engine, models -> provenance.json
include: "workflow/rules/archive.smk"  # `archive` target: one verified .tar.gz; rebuild check
include: "workflow/rules/plan.smk"  # resolved launches + results/commands.sh, nothing started


# On a cluster (profiles/slurm) only engine builds and measuring sessions are submitted; model
# downloads need the network (often only on the login node) and the rest is light.
localrules:
    all,
    model,
    summary,
    sequential_round,
    confirm_choice,
    confirmation,
    figures,
    cycle_breakdown,
    effects,
    load_tables,
    load_figures,
    search,
    bench_serve,
    provenance,
    plan_configuration,
    plan,
    compare,
    archive_pack,
    archive,
    archive_rebuild,
    rebuild,


# Now that every rule says what it writes under results/: no configuration may be named like it.
check_reserved_names()


rule all:
    default_target: True
    input:
        final_outputs(),


# Before any job runs: the expected wall time of the sessions to measure (from the records still in place),
# then a configuration's previous runs, launch record and log move to its history/.
onstart:
    print_walltime()
    keep_previous_sessions()


# The run's conclusion, last on the console: best configuration, significant differences, noisy ones, files.
onsuccess:
    print_conclusion()


# A failed job (with --keep-going, the others still ran): summarise what finished, list what failed.
onerror:
    summarise_what_finished()
