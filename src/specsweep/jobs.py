"""The Snakemake jobs' bodies: each reads its job's inputs and calls the library.

Scripts under scripts/ only call these, so editing logic here does not mark finished
measurements as changed (Snakemake reruns a job when its script file changes).
Each job writes its progress to the console and to its ``log:`` file.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from specsweep.plan.design import configuration_for, configurations_for, session_range
from specsweep.record import results
from specsweep.record.atomic import DamagedFile, atomic_write, read_json, set_aside, write_json

# Every job is a fresh Python that imports this module: each job imports what it uses (pandas, scipy,
# matplotlib, requests, numpy: 0.1-1.5 s each here), so no job pays for another's.


class _Tee:
    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
            stream.flush()
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


@contextlib.contextmanager
def progress_to(log_path: str | Path) -> Iterator[TextIO]:
    """Progress lines go to the console and to the rule's log file."""
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        yield _Tee(sys.stderr, log)  # type: ignore[misc]


def sets_aside_damaged(job: Callable[[Any], None]) -> Callable[[Any], None]:
    """The one place a damaged record file is handled: every job that reads records of the results tree
    (runs, launches, windows, engine, model and plan records) is decorated with it. The damaged file is renamed
    ``<name>.damaged`` (kept as evidence, no longer an output) and the job fails naming it, so rerunning the
    same command makes it again (a run or window file: its configuration is measured again); left in place,
    whichever job read it first would fail the same way at every rerun."""

    @functools.wraps(job)
    def guarded(smk: Any) -> None:
        try:
            job(smk)
        except DamagedFile as damaged:
            raise RuntimeError(
                f"{damaged.path}: damaged ({damaged.why}); set aside as {set_aside(damaged)}: "
                f"rerun the same command to make it again (a run or window file: its configuration is measured "
                f"again)"
            ) from None

    guarded.sets_aside_damaged = True  # type: ignore[attr-defined]
    return guarded


def build_engine(smk: Any) -> None:
    from specsweep.engines import adapter_class

    settings = smk.config["engines"][smk.wildcards.engine]  # params hold fingerprints of secrets
    with progress_to(smk.log[0]) as progress:
        record = adapter_class(settings["kind"]).engine_record(smk.wildcards.engine, settings, progress)
        write_json(Path(smk.output[0]), record)


def obtain_model(smk: Any) -> None:
    from specsweep.record import models

    with progress_to(smk.log[0]) as progress:
        print(f"model {smk.wildcards.model}: obtaining", file=progress)
        record = models.obtain(smk.wildcards.model, smk.params.spec, progress)
        print(f"model {smk.wildcards.model}: {record['path']}", file=progress)
        write_json(Path(smk.output[0]), record)


@sets_aside_damaged
def bench_configuration(smk: Any) -> None:
    from specsweep.measure.job_guard import die_with_snakemake
    from specsweep.measure.session import SessionPaths, measure_configuration
    from specsweep.plan.environment import policy_of

    die_with_snakemake()  # never an orphan measuring beside the next run, after a kill -9 of Snakemake
    configuration = configuration_for(smk.config, smk.params.configuration)
    engine_record = read_json(smk.input.engine)
    model_records = {Path(p).stem: read_json(p) for p in smk.input.models}
    with progress_to(smk.log[0]) as progress:
        measure_configuration(
            configuration,
            smk.config["engines"][configuration.engine],
            engine_record,
            model_records,
            smk.config["benchmark"],
            Path(smk.input.prompts),
            SessionPaths.of(
                configuration.name,
                len(smk.output.runs),
                list(smk.output.windows),
                smk.output.get("rate_search"),
            ),
            progress,
            policy_of(smk.config),
        )


@sets_aside_damaged
def summarise(smk: Any) -> None:
    """Every table: profiles from server logs, then summary, runs, drift, paper and cost model (one job)."""
    from specsweep.analyse import aggregate
    from specsweep.parsers.profile import write_profiles
    from specsweep.record.segments import Segments
    from specsweep.report import tables

    configurations = configurations_for(smk.config, smk.params.configurations.values())
    runs = results.load_runs(smk.input.runs)
    launches = results.load_launches(smk.input.launches)
    with progress_to(smk.log[0]) as progress, tempfile.TemporaryDirectory() as scratch:
        profiles, parse_warnings = write_profiles(
            _profile_outputs(smk.input.server_logs, smk.output.profiles, Path(scratch)),
            smk.params.log_formats,
            smk.params.profile_parsers,
            smk.params.warmup_requests,
            progress,
            smk.threads,
            {
                name: Segments.of(launch.log_segments) if launch.log_segments else None
                for name, launch in launches.items()
            },
        )
        measured = aggregate.Measured(configurations, runs, launches, profiles, parse_warnings)
        files = tables.TableFiles(**{f: smk.output[f] for f in tables.TableFiles.__dataclass_fields__})
        benchmark = smk.config["benchmark"]
        built = tables.build(
            measured, smk.params.profile_parsers, benchmark.get("detect_pct"), session_range(benchmark)
        )
        tables.write(built, files, progress, smk.params.macro_prefix)


def _profile_outputs(server_logs: Iterable[str], declared: Iterable[str], scratch: Path) -> dict[str, str]:
    """Each server log's profile.csv: the declared one, else (a session a sequential round added, whose files
    are not known before the rounds ran) one in ``scratch``, parsed into the summary and not kept."""
    paths = {results.configuration_of_file(p): str(p) for p in declared}
    found = {}
    for log in server_logs:
        name = results.configuration_of_file(log)
        if name not in paths:
            (scratch / name).mkdir()
        found[str(log)] = paths.get(name, str(scratch / name / "profile.csv"))
    return found


@sets_aside_damaged
def plot(smk: Any) -> None:
    import pandas as pd

    from specsweep.report import energyfigures, figures

    configurations = configurations_for(smk.config, smk.params.configurations.values())
    with progress_to(smk.log[0]) as progress:
        figures.plot_sweep(
            pd.read_csv(smk.input.summary),
            pd.read_csv(smk.input.runs),
            configurations,
            results.load_runs(smk.input.run_records),
            figures.FigureFiles(smk.output.throughput, smk.output.acceptance, smk.output.costmodel),
            progress,
        )
        summary = pd.read_csv(smk.input.summary)
        figures.save(energyfigures.efficiency(summary), Path(smk.output.efficiency).with_suffix(""))


def compare_results(smk: Any) -> None:
    from specsweep.report import compare

    with progress_to(smk.log[0]) as progress:
        compare.write(
            smk.input.before, smk.input.after, smk.output.table, smk.output.figure, progress, smk.params.match
        )


@sets_aside_damaged
def sweep_provenance(smk: Any) -> None:
    """Each configuration's provenance.json, then the sweep's, which cites each by sha256."""
    from specsweep.archive import provenance

    records = {p: read_json(p) for p in [*smk.input.engines, *smk.input.models]}
    launches = {p: results.read_launch(p) for p in smk.input.launches}
    with progress_to(smk.log[0]) as progress:
        provenance.write(
            smk.config,  # the effective config (schema defaults filled)
            dict(zip(smk.input.launches, smk.output.configurations, strict=True)),
            launches,
            records,
            smk.params.sources,
            smk.output.sweep,
            progress,
        )


@sets_aside_damaged
def load_tables(smk: Any) -> None:
    """requests.csv and categories.csv always; load.csv with benchmark.load levels, slo_rate.csv with its
    rate search (docs/load.md)."""
    from specsweep.analyse import loadsummary

    configurations = configurations_for(smk.config, smk.params.configurations.values())
    with progress_to(smk.log[0]) as progress:
        loadsummary.write_tables(
            configurations,
            results.load_runs(smk.input.runs),
            results.load_windows(smk.input.windows),
            smk.params.slo,
            {name: smk.output[name] for name in smk.output.keys()},  # noqa: SIM118 (Namedlist: names)
            progress,
            smk.config["benchmark"]["equivalence_pct"],
        )
        if "slo_rate" in smk.output.keys():  # noqa: SIM118 (a Namedlist's `in` looks at values, not names)
            from specsweep.analyse import slorate

            slorate.write(configurations, results.load_rate_searches(smk.input.searches), smk.output.slo_rate, progress)


@sets_aside_damaged
def search_next(smk: Any) -> None:
    """results/next_values.json and next_round.yaml: the swept speculative flag's next values per level, from
    summary.csv, load.csv (with benchmark.load) and the cost model (analyse/search.py)."""
    import pandas as pd

    from specsweep.analyse import costmodel, search
    from specsweep.plan import design

    configurations = configurations_for(smk.config, smk.params.configurations.values())
    model, _ = costmodel.fit_sweep(configurations, results.load_runs(smk.input.runs))
    load = pd.read_csv(smk.input.load) if "load" in smk.input.keys() else None  # noqa: SIM118 (Namedlist: names)
    with progress_to(smk.log[0]) as progress:
        for line in search.write(
            search.level_rates(pd.read_csv(smk.input.summary), load),
            design.measured_configurations(configurations),
            smk.config["configurations"],
            model,
            smk.output.next_values,
            smk.output.next_round,
            smk.params.config_files,
        ):
            print(line, file=progress)


@sets_aside_damaged
def bench_serve(smk: Any) -> None:
    """results/bench_serve.json and vLLM's result files per configuration and level (docs/load.md)."""
    from specsweep.report import benchserve

    with progress_to(smk.log[0]) as progress:
        benchserve.write(
            smk.input.windows,
            list(smk.params.configurations),
            smk.output[0],
            smk.output[1],
            dict(smk.params.meta),
            dict(smk.params.slo),
        )
        print(f"{smk.output[0]} and the result files under {smk.output[1]}/ written", file=progress)


def load_plots(smk: Any) -> None:
    import pandas as pd

    from specsweep.report import energyfigures, figures, loadfigures

    with progress_to(smk.log[0]) as progress:
        categories = pd.read_csv(smk.input.categories)
        figures.save(loadfigures.categories(categories), Path(smk.output.categories).with_suffix(""))
        if "load" in smk.input.keys():  # noqa: SIM118 (a Namedlist's `in` looks at values, not names)
            table = pd.read_csv(smk.input.load)
            figures.save(loadfigures.load_speedup(table), Path(smk.output.speedup).with_suffix(""))
            figures.save(loadfigures.load_latency(table), Path(smk.output.latency).with_suffix(""))
            figures.save(energyfigures.load_efficiency(table), Path(smk.output.efficiency).with_suffix(""))
        print(f"load and category figures written to {Path(smk.output.categories).parent}", file=progress)


def pack_archive(smk: Any) -> None:
    """Everything of the sweep plus the code that made it, as one deterministic .tar.gz."""
    from specsweep.archive import archive

    inputs = {name: archive.files_of(str(p) for p in paths) for name, paths in smk.input.items() if name != "prompts"}
    with progress_to(smk.log[0]) as progress:
        archive.pack_sweep(
            smk.params.config, smk.input.prompts, inputs, smk.params.source, smk.params.name, smk.output[0], progress
        )


def verify_archive(smk: Any) -> None:
    from specsweep.archive import archive

    with progress_to(smk.log[0]) as progress:
        archive.write_verification(smk.input[0], smk.output[0], progress)


def rebuild_archive(smk: Any) -> None:
    from specsweep.archive import archive

    with progress_to(smk.log[0]) as progress:
        archive.write_rebuilt_in_empty_folder(smk.input[0], smk.output[0], progress)


def check_rebuild(smk: Any) -> None:
    """In an unpacked archive: the rebuilt files must equal the archived ones; the rest is listed as not checked."""
    from specsweep.archive import archive

    names = archive.files_of(str(p) for p in smk.input if str(p) != archive.MANIFEST)
    with progress_to(smk.log[0]) as progress:
        archive.write_rebuild_check(
            Path(smk.input.manifest).parent, names, dict(smk.params.not_checked), smk.output[0], progress
        )


def plan_configuration(smk: Any) -> None:
    import specsweep.plan.launchplan as launchplan
    from specsweep.plan.environment import variables_named

    configuration = configuration_for(smk.config, smk.params.configuration)
    with progress_to(smk.log[0]) as progress:
        planned = launchplan.plan(
            configuration, smk.config["engines"][configuration.engine], smk.params.models, variables_named(smk.config)
        )
        write_json(Path(smk.output[0]), planned)
        print(
            f"{configuration.name}: {launchplan.shell_line(planned) if planned['launches'] else 'external'}",
            file=progress,
        )


@sets_aside_damaged
def write_commands(smk: Any) -> None:
    import specsweep.plan.launchplan as launchplan
    from specsweep.analyse import confirm, sequential
    from specsweep.plan import detectable, walltime
    from specsweep.plan.load_levels import levels_of

    plans = [read_json(p) for p in smk.input]
    configurations = configurations_for(smk.config, smk.params.configurations.values())
    table, details = walltime.report(configurations, smk.config["benchmark"])
    # read before this sweep's summary replaces the earlier one
    power = detectable.lines(configurations, smk.config["benchmark"], results.SUMMARY)
    power += sequential.plan_lines(configurations, smk.config["benchmark"])
    power += confirm.plan_lines(smk.config["benchmark"]["confirm_sessions"], len(levels_of(smk.config["benchmark"])))
    with progress_to(smk.log[0]) as progress:
        atomic_write(smk.output[0], launchplan.commands_script(plans, [*table, "", *power, "", *details]))
        print("\n".join([*table, *power]), file=progress)
        print(f"{len(plans)} launches, and every phase's time and source, written to {smk.output[0]}", file=progress)


def plot_breakdown(smk: Any) -> None:
    import pandas as pd

    from specsweep.report import figures

    with progress_to(smk.log[0]) as progress:
        figures.save_breakdown(pd.read_csv(smk.input.summary), smk.params.profile_parsers, smk.output.png, progress)


@sets_aside_damaged
def write_effects(smk: Any) -> None:
    """results/effects.csv and the interaction figure of every crossed design (config factors)."""
    from specsweep.analyse import aggregate, effects
    from specsweep.report import figures

    configurations = configurations_for(smk.config, smk.params.configurations.values())
    runs = {name: [] for name in configurations} | results.load_runs(smk.input.runs)
    with progress_to(smk.log[0]) as progress:
        found, notes = effects.analyses(configurations, runs)
        frame = effects.table(found)
        aggregate.write_csv(frame, smk.output.table)
        figures.save(figures.interaction(found), Path(smk.output.figure).with_suffix(""))
        print(frame.to_string(index=False), file=progress)
        for note in notes:
            print(f"effects: {note}", file=progress)


@sets_aside_damaged
def sequential_round(smk: Any) -> None:
    """A round's checkpoint: which configurations get the next session (analyse/sequential.py)."""
    from specsweep.analyse import sequential

    benchmark = smk.config["benchmark"]
    following = sequential.next_sessions(
        smk.params.sessions,
        results.load_runs(smk.input.runs),
        smk.params.baseline,
        session_range(benchmark),
        benchmark["detect_pct"],
    )
    with progress_to(smk.log[0]) as progress:
        sequential.write_round(smk.output[0], following)
        done = "none: every verdict and the race for best are decided, or the sessions reached their maximum"
        print(f"next session: {', '.join(following) or done}", file=progress)


@sets_aside_damaged
def confirm_choice(smk: Any) -> None:
    """The checkpoint: what summary.csv and load.csv (with benchmark.load) chose, whose confirmation sessions are
    measured next."""
    from specsweep.analyse import conclusion, confirm

    load = conclusion.read(smk.input.load) if "load" in smk.input.keys() else []  # noqa: SIM118 (Namedlist: names)
    with progress_to(smk.log[0]) as progress:
        choices = confirm.choices_of(conclusion.read(smk.input.summary), load)
        confirm.write_choices(choices, smk.output[0])
        for choice in choices or ["nothing (no baseline, or no configuration beside it)"]:
            print(f"to confirm: {choice}", file=progress)


@sets_aside_damaged
def confirmation(smk: Any) -> None:
    """confirmation.csv: each choice's speedup from its fresh sessions alone."""
    from specsweep.analyse import confirm

    runs, windows = results.load_runs(smk.input.runs), results.load_windows(smk.input.windows)
    found = [
        confirm.confirmed_of(choice, smk.params.sessions, runs, windows)
        for choice in confirm.read_choices(smk.input.choice)
    ]
    with progress_to(smk.log[0]) as progress:
        confirm.write(found, smk.output[0])
        print("\n".join(confirm.conclusion_lines(smk.output[0])), file=progress)
