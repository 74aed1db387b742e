import copy
import glob
import os
import re
import socket
import sys
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError

# The library (src/specsweep) is installed into the venv by `make venv`. On a cluster every job
# parses this file again on its node, with the submitting host's Python path: say what is missing
# (in the job's Slurm log; `onerror` below repeats it on the console).
NODE_WITHOUT_SPECSWEEP = "specsweep cannot be imported by"
STARTED = time.time()
try:
    import specsweep
except ImportError as error:
    raise WorkflowError(
        f"{NODE_WITHOUT_SPECSWEEP} {sys.executable} on {socket.gethostname()} ({error}). "
        f"Every node needs the project's environment at the same path: run `make venv` in "
        f"{workflow.basedir} on a filesystem the nodes share (README, On a cluster)."
    ) from None
# envs/specsweep.yaml (--sdm conda) installs this checkout into the conda env from here.
os.environ.setdefault("SPECSWEEP_ROOT", workflow.basedir)

from specsweep import hooks
from specsweep.measure import cluster as sweep_cluster
from specsweep.plan import config as sweep_config
from specsweep.plan import config_errors
from specsweep.plan import design as sweep_design
from specsweep.plan import factors as sweep_factors
from specsweep.plan import environment as sweep_environment
from specsweep.record import names as sweep_names
from specsweep.archive import provenance as sweep_provenance
from specsweep.record import results as results_tree
from specsweep.plan import strict_yaml
from specsweep.analyse import outdated as sweep_outdated
from specsweep.measure.job_guard import other_runs_in
from specsweep.record.redact import fingerprint, redact_mapping
from specsweep.plan import preflight
from specsweep.engines import log_format_of as engine_log_format
from specsweep.plan.load_levels import levels_of, warmup_windows
from specsweep.plan.rate_search import rate_search_of
from specsweep.plan.staleness import measurement_identity
from specsweep.parsers.user import compile_parsers

# What the user set, before schema defaults: Snakemake params identify a job by these alone, so a
# key a later specsweep adds (with its default) does not rerun finished measurements. Jobs read the
# effective values (defaults filled) from `config`; provenance records those.
USER_CONFIG = copy.deepcopy(config)
# The files the user's config came from: errors name the file and line of the key they are about.
CONFIG_FILES = list(workflow.overwrite_configfiles) or ["config/config.yaml"]
if misplaced := config_errors.misplaced_targets(workflow.overwrite_configfiles):
    config_errors.exit_with(
        config_errors.misplaced_target_message(misplaced, CONFIG_FILES)
    )

try:
    # Duplicate keys and alias bombs, which YAML itself lets through (silently, or expanding later).
    for path in workflow.configfiles:
        strict_yaml.check_file(path)
    # JSON schema (workflow/schemas/config.schema.yaml, via snakemake.utils.validate, which
    # fills in defaults), then the checks a schema cannot express.
    config.update(sweep_config.validate_schema(config))
    # Grids expanded; benchmark.order: bracket adds <baseline>-end, measured after the others.
    CONFIGURATIONS = sweep_design.configurations_of(config)
    # benchmark.confirm_sessions: every fresh session a choice could need (confirm.smk measures the choices')
    CONFIRMATIONS = sweep_design.confirmations_of(
        CONFIGURATIONS, config["benchmark"]["confirm_sessions"]
    )
    # what a bench job may measure: the design's sessions and the confirmation sessions
    MEASURABLE = {**CONFIGURATIONS, **CONFIRMATIONS}
    PROFILE_PARSERS = compile_parsers(config.get("profile_parsers"))
    # Engine settings, files, then engine domain checks (e.g. SGLang EAGLE tree sizes): warnings, errors
    # when impossible.
    preflight.check(config, CONFIGURATIONS)
    # Before anything starts: inherited variables that the sweep sets or unsets somewhere.
    for warning in sweep_environment.inherited_warnings(
        os.environ, sweep_environment.swept_variables(CONFIGURATIONS.values())
    ):
        print(f"specsweep warning: {warning}", file=sys.stderr)
except sweep_config.ConfigError as error:
    config_errors.exit_with(
        config_errors.explain(error, CONFIG_FILES, workflow.config_settings.config)
    )

# --unlock is safe only when no other run of this folder is alive (after a kill -9 of Snakemake).
if "--unlock" in sys.argv and (alive := other_runs_in(Path.cwd())):
    raise WorkflowError(
        "another run of this folder is still alive, so unlocking now would let two runs write the same "
        "results: wait for it to end or stop it (kill <pid>), then --unlock:\n  "
        + "\n  ".join(alive)
    )

BENCH = config["benchmark"]
# Only what a measurement depends on identifies it (not the SLOs, timeouts or which levels are listed).
BENCH_IDENTITY = measurement_identity(USER_CONFIG.get("benchmark", {}))
# All of --cores for the summary job (parsing large logs in parallel); 1 where a command sets none
# (--report, --unlock, cluster executors): `workflow.cores` would raise there.
SUMMARY_THREADS = workflow.resource_settings.cores or 1
RUNS = list(range(BENCH["runs"]))
# Load levels (benchmark.load): each configuration's session also measures windows of requests per level.
LOAD_LEVELS = levels_of(BENCH)
LOAD_LABELS = [level.label for level in LOAD_LEVELS]
# the level's discarded warmup window (window_warmup.json) first, then the measured ones
WINDOWS = (
    ([results_tree.WARMUP] if warmup_windows(BENCH) else [])
    + list(range(BENCH["load"]["windows"]))
    if LOAD_LEVELS
    else []
)

# The SLO rate search (benchmark.load.rate_search): each session's record, found rate per configuration.
RATE_SEARCH = rate_search_of(BENCH)

# Measuring jobs must never overlap, whatever --cores says: each takes the whole of this
# resource (and a node-local file lock, for separate Snakemake invocations). On a cluster each
# measuring job owns its node, and profiles/slurm raises it to the number of jobs in flight.
if "measuring" not in workflow.global_resources:
    workflow.register_resource("measuring", 1)


wildcard_constraints:
    cfg="|".join(re.escape(name) for name in MEASURABLE),
    engine="|".join(re.escape(name) for name in config["engines"]),
    model="|".join(re.escape(name) for name in config.get("models", {})) or "^$",
    i=r"\d+",


def final_outputs():
    return [
        results_tree.SUMMARY,
        results_tree.figure("throughput"),
        results_tree.figure("acceptance"),
        results_tree.COSTMODEL_REPORT,
        results_tree.figure("costmodel"),
        results_tree.figure("efficiency"),
        results_tree.DRIFT,
        results_tree.PROVENANCE,
        results_tree.NEXT_VALUES,
        *LOAD_OUTPUTS,
        *PAPER,
        *breakdown_figures(),
        *effects_outputs(),
        *([results_tree.CONFIRMATION] if CONFIRMATIONS else []),
    ]


# benchmark.sessions: {min, max}: each configuration's sessions in order, and the one baseline they are compared with
SESSION_RANGE = sweep_design.session_range(BENCH)
SESSION_NAMES = sweep_design.sessions_of(CONFIGURATIONS)
SEQUENTIAL_BASELINE = next(
    (name for name in SESSION_NAMES if CONFIGURATIONS[name].baseline), ""
)
# Rounds only with a baseline to compare with (else the fixed design: every session up to max).
ROUNDS = SESSION_RANGE.sequential and bool(SEQUENTIAL_BASELINE)
# benchmark.order: bracket's <baseline>-end, measured after every round ("" without it)
END_SESSION = next(
    (
        name
        for name in CONFIGURATIONS
        if SEQUENTIAL_BASELINE and name == sweep_design.end_name(SEQUENTIAL_BASELINE)
    ),
    "",
)
# The sessions every run of this design measures: each configuration's first min (all of them without rounds)
# and the bracket's end. The per-session files a rule declares up front (profile.csv, provenance.json) are
# theirs: a session a round adds has none (its server log is still parsed into summary.csv).
FIXED_SESSIONS = (
    sweep_design.fixed_sessions(CONFIGURATIONS, SESSION_RANGE)
    if ROUNDS
    else list(CONFIGURATIONS)
)


def checkpoint_round(r):
    """Round r's checkpoint file: asked for in an input function, Snakemake runs the checkpoint first."""
    return checkpoints.sequential_round.get(r=r).output[0]


def recorded_round(r):
    """Round r's file where a run already wrote it (None before): for the checks outside the jobs' inputs."""
    path = results_tree.sequential_round(r)
    return path if os.path.exists(path) else None


def rounds_taken(round_file=checkpoint_round, through=SESSION_RANGE.max):
    """The checkpoint files of the rounds looked at before session ``through``, up to the one that gave no
    session (none without rounds).
    """
    from specsweep.analyse import sequential

    taken = []
    for r in range(SESSION_RANGE.min, through) if ROUNDS else []:
        path = round_file(r)
        if path is None:
            break
        taken.append(path)
        if not sequential.read_round(path):
            break
    return taken


def round_sessions(through, round_file=checkpoint_round):
    """The sessions measured up to session ``through``: every configuration's first ``min``, then those each
    round's checkpoint gave one more (every session without rounds), in the configurations' order.
    """
    if not ROUNDS:
        return list(CONFIGURATIONS)
    from specsweep.analyse import sequential

    found = {name for name in FIXED_SESSIONS if name != END_SESSION}
    for path in rounds_taken(round_file, through):
        found.update(sequential.read_round(path))
    return [name for name in CONFIGURATIONS if name in found]


def measured_sessions(round_file=checkpoint_round):
    """The one list of the sessions this design measures, which every table, figure, provenance record and the
    archive rest on: the rounds' (their checkpoints decide it), then the bracket's end.
    """
    return round_sessions(SESSION_RANGE.max, round_file) + (
        [END_SESSION] if ROUNDS and END_SESSION else []
    )


def round_runs(wildcards):
    """The run files a round's checkpoint decides on: those of the sessions up to its round."""
    return [
        results_tree.run_file(name, i)
        for name in round_sessions(int(wildcards.r))
        for i in RUNS
    ]


def confirmation_sessions():
    """The confirmation sessions the checkpoint's choices need (Snakemake waits for it to choose)."""
    from specsweep.analyse import confirm

    choices = confirm.read_choices(checkpoints.confirm_choice.get().output[0])
    return confirm.sessions_of(choices, BENCH["confirm_sessions"])


def confirmation_runs(wildcards):
    """The runs of the confirmation sessions: the single-request choice's speedup."""
    return [
        results_tree.run_file(name, i) for name in confirmation_sessions() for i in RUNS
    ]


def confirmation_windows(wildcards):
    """The load windows of the confirmation sessions, each a whole session: the load levels' speedups."""
    return [
        results_tree.window_file(name, label, w)
        for name in confirmation_sessions()
        for label in LOAD_LABELS
        for w in WINDOWS
    ]


def effects_outputs():
    """The effects table and interaction figure, when configurations are crossed from factors."""
    if any(c.levels for c in CONFIGURATIONS.values()):
        return [results_tree.EFFECTS, results_tree.figure("interaction")]
    return []


def breakdown_figures():
    """The cycle-breakdown figure, when a profile parser says which columns make up a cycle."""
    if any(p.breakdown for p in PROFILE_PARSERS):
        return [results_tree.figure("cycle_breakdown")]
    return []


# The files each configuration gets (results_tree functions of its name), as the rules expand them: what
# is left of the rules' outputs is the pipeline's own (check_reserved_names).
CONFIGURATION_FILES = set()


def per_configuration(path_of):
    """One path per planned session, e.g. per_configuration(results_tree.plan_file)."""
    CONFIGURATION_FILES.add(path_of)
    return [path_of(name) for name in CONFIGURATIONS]


def per_fixed_session(path_of):
    """One path per session every run of the design measures (FIXED_SESSIONS): what a rule declares up front."""
    CONFIGURATION_FILES.add(path_of)
    return [path_of(name) for name in FIXED_SESSIONS]


def per_measured_session(path_of):
    """An input function: one path per session measured (measured_sessions), e.g. of results_tree.launch_file."""
    CONFIGURATION_FILES.add(path_of)

    def of_sessions(wildcards):
        return [path_of(name) for name in measured_sessions()]

    return of_sessions


def plan_files(wildcards):
    return per_configuration(results_tree.plan_file)


def models_named(configuration):
    """The model records a configuration uses: its engine's model and its draft model."""
    engine = config["engines"][configuration.engine]
    names = {engine.get("model"), configuration.draft_model} - {None}
    return [results_tree.model_record_file(model) for model in sorted(names)]


# Per configuration, the engine and model records its session uses and its provenance cites.
RECORD_SOURCES = {
    name: {
        "engine": results_tree.engine_record_file(c.engine),
        "models": models_named(c),
    }
    for name, c in MEASURABLE.items()
}


def models_of(wildcards):
    return RECORD_SOURCES[wildcards.cfg]["models"]


def engine_record(wildcards):
    return RECORD_SOURCES[wildcards.cfg]["engine"]


# The log format of each configuration's server log.
ENGINE_RECORDS = sorted({s["engine"] for s in RECORD_SOURCES.values()})
MODEL_RECORDS = sorted({m for s in RECORD_SOURCES.values() for m in s["models"]})
SERVER_LOG_FORMATS = {
    name: {"kind": c.kind, "format": engine_log_format(config["engines"][c.engine])}
    for name, c in CONFIGURATIONS.items()
}


# Params identify what a job measures (a change reruns it) but are stored in plain text in
# .snakemake/metadata: secrets appear as fingerprints; jobs read real values from the config.
# Computed once, not per job (planning 1,000 configurations calls these 3,000 times).
IDENTITIES = {name: c.identity() for name, c in CONFIGURATIONS.items()}
# with the confirmation sessions', which only their bench jobs use
MEASURABLE_IDENTITIES = IDENTITIES | {
    name: c.identity() for name, c in CONFIRMATIONS.items()
}


def configuration_params(wildcards):
    return MEASURABLE_IDENTITIES[wildcards.cfg]


def engine_params(wildcards):
    return engine_identity(MEASURABLE[wildcards.cfg].engine)


def engine_identity(name):
    return redact_mapping(USER_CONFIG["engines"][name], replace=fingerprint)


def all_configurations(wildcards):
    """Every planned session (the plan's)."""
    return IDENTITIES


def measured_configurations(wildcards):
    """The sessions measured (the tables' and figures'): Snakemake waits for the rounds' checkpoints."""
    return {name: IDENTITIES[name] for name in measured_sessions()}


# The measured sessions' files: ``round_file=recorded_round`` for the checks outside the jobs' inputs.
def window_files(wildcards, round_file=checkpoint_round):
    return [
        results_tree.window_file(name, label, w)
        for name in measured_sessions(round_file)
        for label in LOAD_LABELS
        for w in WINDOWS
    ]


def rate_search_files(wildcards):
    return (
        [results_tree.rate_search_file(name) for name in measured_sessions()]
        if RATE_SEARCH
        else []
    )


def run_files(wildcards, round_file=checkpoint_round):
    return [
        results_tree.run_file(name, i)
        for name in measured_sessions(round_file)
        for i in RUNS
    ]


# A summary.csv that rests on a deleted run file, or the provisional one of a failed sweep, is remade
# (decided once, by the Snakemake the user started, not again in each job a cluster executor starts;
# marked only by one that runs jobs: a dry run or --report never touches results).
if workflow.is_main_process:
    if not sweep_outdated.executes(sys.argv[1:]) and "--report" in sys.argv:
        if found := sweep_outdated.other_sweep(results_tree.SUMMARY, CONFIGURATIONS):
            config_errors.exit_with(
                sweep_outdated.other_sweep_message(
                    results_tree.SUMMARY, found, CONFIG_FILES
                )
            )
    sweep_outdated.check_results(
        results_tree.SUMMARY,
        run_files(None, recorded_round),
        [
            results_tree.LOAD_TABLE,
            results_tree.REQUESTS_TABLE,
            results_tree.CATEGORIES_TABLE,
        ],
        window_files(None, recorded_round),
        CONFIGURATIONS,
        sys.stderr,
        mark=sweep_outdated.executes(sys.argv[1:]),
    )


def engine_settings(wildcards):
    return engine_identity(wildcards.engine)


def model_spec(wildcards):
    return config["models"][wildcards.model]


def runs_before(wildcards):
    """<baseline>-end (benchmark.order: bracket) waits for every other session measured (with rounds, once they
    are all decided; asking any other session's job would wait on the rounds its own runs decide).
    """
    if ROUNDS and wildcards.cfg == END_SESSION:
        measured = {name: CONFIGURATIONS[name] for name in measured_sessions()}
        return sweep_design.runs_before(wildcards.cfg, measured, RUNS)
    return sweep_design.runs_before(wildcards.cfg, CONFIGURATIONS, RUNS)


# Sessions in rounds, each its own seeded shuffle of every configuration, the baseline among them (plan/design.py).
SESSION_PRIORITIES = sweep_design.session_priorities(
    CONFIGURATIONS
) | sweep_design.confirmation_priorities(
    CONFIRMATIONS, sweep_design.order_seed(CONFIGURATIONS)
)


# cluster.same_node: each configuration measured on the node its baseline was measured on (docs/cluster.md);
# a confirmation session too (the baseline's own on its first session's node).
BASELINES = sweep_factors.baselines_by_configuration(CONFIGURATIONS)
SAME_NODE = (
    sweep_cluster.same_node_as(
        CONFIGURATIONS,
        BASELINES,
        {
            sweep_design.end_name(name): name
            for name, c in CONFIGURATIONS.items()
            if c.baseline
        },
    )
    | {
        name: BASELINES.get(c.session_of) or c.session_of
        for name, c in CONFIRMATIONS.items()
    }
    if config["cluster"]["same_node"]
    else {}
)


def same_node_input(wildcards):
    """With cluster.same_node: the baseline's launch record, so the job is submitted once it is measured."""
    pinned = SAME_NODE.get(wildcards.cfg)
    return [results_tree.launch_file(pinned)] if pinned else []


def measuring_slurm_extra(wildcards, input):
    """slurm_extra of a measuring job; with cluster.same_node, --nodelist of the baseline's node (Snakemake
    evaluates it again once the job's input, that launch record, exists)."""
    extra = MEASURING_RESOURCES[wildcards.cfg]["slurm_extra"]
    pinned = sweep_cluster.nodelist_flag(
        input.same_node[0] if input.same_node else None
    )
    return " ".join(filter(None, [extra, pinned]))


def bench_priority(wildcards):
    return SESSION_PRIORITIES[wildcards.cfg]


def compare_input(key):
    if key not in config.get("compare", {}):
        raise WorkflowError(
            f"compare/{key}: not set; run e.g. snakemake --cores 1 compare "
            "--config compare='{before: old/results, after: results}'"
        )
    return config["compare"][key]


def compare_before(wildcards):
    return compare_input("before")


def compare_after(wildcards):
    return compare_input("after")


# Provenance, paper and archive (provenance.smk, summary.smk, archive.smk).
CONFIG_SHA256 = sweep_provenance.config_sha256(config)
ARCHIVE_NAME = f"specsweep-{CONFIG_SHA256[:12]}"
ARCHIVE = results_tree.archive_file(ARCHIVE_NAME)
# The load and workload tables and figures (load.smk); the load ones only with benchmark.load.
LOAD_TABLES = (
    [results_tree.REQUESTS_TABLE, results_tree.CATEGORIES_TABLE]
    + (
        [results_tree.LOAD_TABLE, results_tree.SPECULATION_SCHEDULE]
        if LOAD_LEVELS
        else []
    )
    + ([results_tree.SLO_RATE_TABLE] if RATE_SEARCH else [])
)
LOAD_FIGURES = [
    results_tree.figure(name, fmt)
    for name in ["categories"]
    + (["load_speedup", "load_latency", "load_efficiency"] if LOAD_LEVELS else [])
    for fmt in results_tree.FIGURE_FORMATS
]
LOAD_OUTPUTS = (
    LOAD_TABLES
    + LOAD_FIGURES
    + ([results_tree.BENCH_SERVE, results_tree.BENCH_SERVE_DIR] if LOAD_LEVELS else [])
)
FIGURES = [
    results_tree.figure(name, fmt)
    for name in ("throughput", "acceptance", "costmodel", "efficiency")
    for fmt in results_tree.FIGURE_FORMATS
]
PAPER = [results_tree.PAPER_MACROS, results_tree.PAPER_TABLE]
# What a rebuild from an archive recomputes (no engine): every derived file but provenance, each compared
# with the archive's manifest (archive.REBUILD_COMMAND forces the jobs that make them).
REBUILT = [
    results_tree.SUMMARY,
    results_tree.RUNS_TABLE,
    results_tree.DRIFT,
    results_tree.COSTMODEL,
    results_tree.COSTMODEL_PARAMETERS,
    results_tree.COSTMODEL_REPORT,
    results_tree.NEXT_VALUES,
    *per_fixed_session(results_tree.profile_file),
    *FIGURES,
    *LOAD_OUTPUTS,
    *PAPER,
    *breakdown_figures(),
    *effects_outputs(),
]
# The derived files a rebuild does not make again, listed as not checked in its report: provenance describes
# the machine and environment of the sweep (a snapshot taken when it was written), not the archived records.
NOT_REBUILT = {
    path: "the sweep's machine and environment, which a rebuild elsewhere does not reproduce; "
    "MANIFEST.sha256 checks it is unaltered"
    for path in [
        results_tree.PROVENANCE,
        *per_fixed_session(results_tree.configuration_provenance),
    ]
} | {
    path: "made after the summary by the confirmation's checkpoint, which a rebuild does not rerun; "
    "MANIFEST.sha256 checks it is unaltered"
    for path in (
        [results_tree.CONFIRMATION_CHOICE, results_tree.CONFIRMATION]
        if CONFIRMATIONS
        else []
    )
}


def redacted_config(wildcards):
    return redact_mapping(config)


def config_identity(wildcards):
    """The effective config as a rerun trigger (secrets as fingerprints; the job reads `config`):
    provenance records the effective config, so it is rewritten when a default changes.
    """
    return redact_mapping(config, replace=fingerprint)


def archive_inputs(wildcards):
    return {
        "prompts": BENCH["prompts"],
        "records": ENGINE_RECORDS + MODEL_RECORDS,
        "launches": per_measured_session(results_tree.launch_file)(wildcards),
        "server_logs": per_measured_session(results_tree.server_log)(wildcards),
        # benchmark.sessions {min, max}: who got each round's session (the rebuild reads them, never reruns them)
        "rounds": rounds_taken(),
        # adaptive extras (runs/extra/) exist once their session ran; the summary reads them too
        "runs": [
            str(path) for path in results_tree.with_extra_runs(run_files(wildcards))
        ]
        + window_files(wildcards)
        + rate_search_files(wildcards),
        "profiles": per_fixed_session(results_tree.profile_file),
        "provenance": [
            results_tree.PROVENANCE,
            *per_fixed_session(results_tree.configuration_provenance),
        ],
        "aggregates": REBUILT,
        "final_outputs": final_outputs(),  # whatever else `all` makes (cost model, drift, ...)
        "confirmation": confirmation_files(wildcards),
    }


def confirmation_files(wildcards):
    """benchmark.confirm_sessions: the choice and every file of its fresh sessions (none when off)."""
    if not CONFIRMATIONS:
        return []
    sessions = confirmation_sessions()
    return [
        results_tree.CONFIRMATION_CHOICE,
        *[
            str(path)
            for path in results_tree.with_extra_runs(confirmation_runs(wildcards))
        ],
        *[results_tree.launch_file(name) for name in sessions],
        *[results_tree.server_log(name) for name in sessions],
        *confirmation_windows(wildcards),
        *(
            [results_tree.rate_search_file(name) for name in sessions]
            if RATE_SEARCH
            else []
        ),
    ]


def print_conclusion():
    """onsuccess: what results/summary.csv concludes, when this run made it (hooks.py)."""
    made = any(job.rule.name == "summary" for job in workflow.dag.jobs)
    hooks.print_conclusion(
        made,
        bool(CONFIRMATIONS),
        workflow.overwrite_configfiles,
        sys.stderr,
        (
            (len(measured_sessions(recorded_round)), len(CONFIGURATIONS))
            if ROUNDS
            else None
        ),
    )


def summarise_what_finished():
    """onerror: every configuration in results/summary.csv, failed ones with their evidence (hooks.py)."""
    if not any(job.rule.name in ("bench", "summary") for job in workflow.dag.jobs):
        return  # the targets (compare, plan) do not rest on this config's measurements: nothing of it to say
    # a job that failed before its rule's log existed left only its Slurm log
    slurm_logs = (
        getattr(workflow.executor_settings, "logdir", None) or ".snakemake/slurm_logs"
    )
    hooks.summarise_what_finished(
        {name: CONFIGURATIONS[name] for name in measured_sessions(recorded_round)},
        config,
        STARTED,
        sys.argv,
        slurm_logs,
        NODE_WITHOUT_SPECSWEEP,
        sys.stderr,
    )


# What submitted jobs ask a cluster scheduler for (profiles/slurm); locally this changes nothing.
MEASURING_RESOURCES = {
    name: sweep_cluster.measuring_resources(
        config["engines"][c.engine], BENCH, config["cluster"]
    )
    for name, c in MEASURABLE.items()
}


def measuring_resource(key):
    """A resource of the measuring job of configuration {cfg} (gpu, cpus_per_task, mem_mb, ...)."""

    def of_configuration(wildcards):
        return MEASURING_RESOURCES[wildcards.cfg][key]

    return of_configuration


def build_resource(key):
    """A resource of the engine build job of {engine}."""

    def of_engine(wildcards):
        return sweep_cluster.build_resources(
            config["engines"][wildcards.engine], config["cluster"]
        )[key]

    return of_engine


def newest_launch_record(wildcards):
    """When the newest session under results/ was recorded (0 before any): what the plan's estimate uses."""
    stamps = [os.stat(p).st_mtime for p in glob.glob(results_tree.launch_file("*"))]
    return max(stamps, default=0)


def measuring_jobs():
    """The measuring jobs this run is about to run: each one's configuration and its rule's log files."""
    return [
        (job.wildcards.cfg, list(job.log))
        for job in workflow.dag.needrun_jobs()
        if job.rule.name == "bench"
    ]


def print_walltime():
    """onstart: the expected wall time of the sessions this run measures (hooks.py)."""
    measuring = [name for name, _ in measuring_jobs()]
    hooks.print_walltime(measuring, CONFIGURATIONS, MEASURABLE, BENCH, sys.stderr)


def keep_previous_sessions():
    """onstart: a measuring job's previous session kept in results/<cfg>/history/ (hooks.py)."""
    hooks.keep_previous_sessions(measuring_jobs(), MEASURABLE, config, sys.stderr)


def check_reserved_names():
    """A configuration named like a file or folder the rules write under results/ (summary.csv, plan,
    commands.sh, ...) is refused; the reserved names come from the rules themselves (names.py), and
    the report a command writes there.
    """
    own = {p for path_of in CONFIGURATION_FILES for p in per_configuration(path_of)}
    written = [
        str(f)
        for rule in workflow.rules
        for f in [*rule.output, *rule.log]
        if str(f) not in own
    ] + [results_tree.REPORT]
    try:
        sweep_names.check_not_reserved(
            CONFIGURATIONS, sweep_names.reserved_names(written)
        )
    except sweep_config.ConfigError as error:
        config_errors.exit_with(
            config_errors.explain(error, CONFIG_FILES, workflow.config_settings.config)
        )


def reported(outputs, captions):
    """``outputs`` with those named in ``captions`` flagged for the report."""
    flagged = dict(outputs)
    for key, (caption, category) in captions.items():
        if key in outputs:
            flagged[key] = report(
                outputs[key], caption=f"../report/{caption}", category=category
            )
    return flagged
