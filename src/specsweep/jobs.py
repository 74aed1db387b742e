"""The Snakemake jobs' bodies: each reads its job's inputs and calls the library.

Scripts under scripts/ only call these, so editing logic here does not mark finished
measurements as changed (Snakemake reruns a job when its script file changes).
Each job writes its progress to the console and to its ``log:`` file.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from specsweep import results
from specsweep.atomic import atomic_write, write_json
from specsweep.design import configuration_for, configurations_for

# Every job is a fresh Python that imports this module: each job imports what it uses (pandas, scipy,
# matplotlib, requests, numpy: 0.1-1.5 s each here), so no job pays for another's.


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text())


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


def build_engine(smk: Any) -> None:
    from specsweep.engines import adapter_class

    settings = smk.config["engines"][smk.wildcards.engine]  # params hold fingerprints of secrets
    with progress_to(smk.log[0]) as progress:
        record = adapter_class(settings["kind"]).engine_record(smk.wildcards.engine, settings, progress)
        write_json(Path(smk.output[0]), record)


def obtain_model(smk: Any) -> None:
    from specsweep import models

    with progress_to(smk.log[0]) as progress:
        print(f"model {smk.wildcards.model}: obtaining", file=progress)
        record = models.obtain(smk.wildcards.model, smk.params.spec, progress)
        print(f"model {smk.wildcards.model}: {record['path']}", file=progress)
        write_json(Path(smk.output[0]), record)


def bench_configuration(smk: Any) -> None:
    from specsweep.session import SessionPaths, measure_configuration

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
            SessionPaths.of(configuration.name, len(smk.output.runs)),
            progress,
        )


def summarise(smk: Any) -> None:
    """Every table: profiles from server logs, then summary, runs, drift, paper and cost model (one job)."""
    import pandas as pd

    from specsweep import aggregate, tables
    from specsweep.parsers.profile import write_profile

    configurations = configurations_for(smk.config, smk.params.configurations.values())
    runs = results.load_runs(smk.input.runs)
    launches = results.load_launches(smk.input.launches)
    with progress_to(smk.log[0]) as progress:
        for log, output in zip(smk.input.server_logs, smk.output.profiles, strict=True):
            name = results.configuration_of_file(log)
            write_profile(
                log,
                output,
                smk.params.log_formats[name]["kind"],
                smk.params.log_formats[name]["format"],
                smk.params.profile_parsers,
                smk.params.warmup_requests,
                progress,
                name,
                smk.threads,
            )
        profiles = {results.configuration_of_file(p): pd.read_csv(p) for p in smk.output.profiles}
        built = tables.build(aggregate.Measured(configurations, runs, launches, profiles), smk.params.profile_parsers)
        tables.write(
            built,
            tables.TableFiles(**{f: smk.output[f] for f in tables.TableFiles.__dataclass_fields__}),
            progress,
            smk.params.macro_prefix,
        )


def plot(smk: Any) -> None:
    import pandas as pd

    import specsweep.costmodel as costmodel
    from specsweep import figures

    summary = pd.read_csv(smk.input.summary)
    runs = pd.read_csv(smk.input.runs)
    configurations = configurations_for(smk.config, smk.params.configurations.values())
    with progress_to(smk.log[0]) as progress:
        figures.save(figures.throughput(summary, runs), Path(smk.output.throughput).with_suffix(""))
        figures.save(figures.acceptance(summary), Path(smk.output.acceptance).with_suffix(""))
        # The curves are refitted from the runs (deterministic, milliseconds): the tables hold no curves.
        model, text = costmodel.fit_or_reason(configurations, results.load_runs(smk.input.run_records))
        figures.save(figures.costmodel(model, text), Path(smk.output.costmodel).with_suffix(""))
        print(f"figures written to {Path(smk.output.throughput).parent}", file=progress)


def compare_results(smk: Any) -> None:
    import specsweep.compare as compare_sets
    from specsweep import aggregate, figures

    with progress_to(smk.log[0]) as progress:
        frame = compare_sets.compare(
            compare_sets.load(smk.input.before), compare_sets.load(smk.input.after), smk.params.match
        )
        aggregate.write_csv(frame, smk.output.table)
        figures.save(
            figures.comparison(frame, smk.input.before, smk.input.after, compare_sets.nothing_compared(frame)),
            Path(smk.output.figure).with_suffix(""),
        )
        for line in compare_sets.describe(frame, smk.input.before, smk.input.after):
            print(line, file=progress)


def sweep_provenance(smk: Any) -> None:
    """Each configuration's provenance.json, then the sweep's, which cites each by sha256."""
    from specsweep import machine, provenance
    from specsweep.cache import sha256_file
    from specsweep.engines import provenance_packages

    current = machine.snapshot(engine_packages=provenance_packages())  # the machine now

    config_hash = provenance.config_sha256(smk.config)  # the effective config (schema defaults filled)
    engines = {p: read_json(p) for p in smk.input.engines}
    model_records = {p: read_json(p) for p in smk.input.models}
    records, files = {}, {}
    with progress_to(smk.log[0]) as progress:
        for launch_path, output in zip(smk.input.launches, smk.output.configurations, strict=True):
            launch = results.read_launch(launch_path)
            name = results.configuration_of_file(launch_path)
            sources = smk.params.sources[name]
            # Sessions record the machine at launch; a launch.json from before that gets today's snapshot, marked so.
            later = None if launch.machine else current
            records[name] = provenance.configuration_record(
                launch,
                engines[sources["engine"]],
                {Path(m).stem: model_records[m] for m in sources["models"]},
                config_hash,
                later,
            )
            write_json(Path(output), records[name])
            files[name] = {"file": str(output), "sha256": sha256_file(Path(output))}
            print(f"{name}: provenance (machine {records[name]['machine_captured']})", file=progress)
        write_json(Path(smk.output.sweep), provenance.sweep_record(smk.config, records, files, current))
        print(f"sweep provenance of {len(records)} configurations written", file=progress)


def pack_archive(smk: Any) -> None:
    """Everything of the sweep plus the code that made it, as one deterministic .tar.gz."""
    import yaml

    from specsweep import archive, machine
    from specsweep.redact import REDACTED, secret_values

    config = smk.params.config
    config["benchmark"]["prompts"] = "config/prompts.txt"  # where the archive keeps it
    members: dict[str, bytes | Path] = {
        "config/config.yaml": yaml.safe_dump(config, sort_keys=False).encode(),
        "config/prompts.txt": Path(smk.input.prompts),
    }
    for name, paths in smk.input.items():
        if name != "prompts":
            members.update({str(p): Path(p) for p in paths})
    source = Path(smk.params.source)
    members.update({f"code/{name}": path for name, path in archive.code_files(source).items()})
    git = machine.git_state(source) or {}
    members["README.md"] = archive.readme(smk.params.name, git.get("commit"), git.get("dirty")).encode()
    with progress_to(smk.log[0]) as progress:
        packed = archive.pack(members, Path(smk.output[0]), smk.params.name, secret_values(dict(os.environ)))
        for name in packed.redacted:
            print(f"WARNING: {name}: a secret value from the environment was replaced by {REDACTED}", file=progress)
        print(f"{packed.path}: {len(packed.files)} files + manifest, {packed.path.stat().st_size} bytes", file=progress)


def verify_archive(smk: Any) -> None:
    from specsweep import archive
    from specsweep.cache import sha256_file

    path = Path(smk.input[0])
    problems = archive.verify(path)
    with progress_to(smk.log[0]) as progress:
        for problem in problems:
            print(problem, file=progress)
        if problems:
            raise RuntimeError(f"{path}: the manifest does not verify ({len(problems)} problems, see above)")
        _top, files = archive.read_members(path)
        atomic_write(
            smk.output[0],
            f"{path.name}\nsha256 {sha256_file(path)}\n{len(files) - 1} files, "
            f"every sha256 matches {archive.MANIFEST}\n",
        )
        print(f"{path}: {len(files) - 1} files verified against {archive.MANIFEST}", file=progress)


def check_rebuild(smk: Any) -> None:
    """In an unpacked archive: the rebuilt aggregates must equal the archived ones byte for byte."""
    from specsweep import archive

    names = [str(p) for p in smk.input if str(p) != archive.MANIFEST]
    problems = archive.rebuild_problems(Path(smk.input.manifest).parent, names)
    with progress_to(smk.log[0]) as progress:
        for problem in problems:
            print(problem, file=progress)
        if problems:
            raise RuntimeError(f"the rebuild differs from the archive in {len(problems)} files (see above)")
        atomic_write(smk.output[0], "".join(f"identical  {n}\n" for n in names))
        print(f"rebuilt {len(names)} files, all byte-identical to the archive", file=progress)


def plan_configuration(smk: Any) -> None:
    import specsweep.launchplan as launchplan

    configuration = configuration_for(smk.config, smk.params.configuration)
    with progress_to(smk.log[0]) as progress:
        planned = launchplan.plan(configuration, smk.config["engines"][configuration.engine], smk.params.models)
        write_json(Path(smk.output[0]), planned)
        print(
            f"{configuration.name}: {launchplan.shell_line(planned) if planned['launches'] else 'external'}",
            file=progress,
        )


def write_commands(smk: Any) -> None:
    import specsweep.launchplan as launchplan

    plans = [read_json(p) for p in smk.input]
    with progress_to(smk.log[0]) as progress:
        atomic_write(smk.output[0], launchplan.commands_script(plans))
        print(f"{len(plans)} launches written to {smk.output[0]}", file=progress)


def plot_breakdown(smk: Any) -> None:
    import pandas as pd

    from specsweep import figures
    from specsweep.parsers.user import compile_parsers

    summary = pd.read_csv(smk.input.summary)
    with progress_to(smk.log[0]) as progress:
        for parser in compile_parsers(smk.params.profile_parsers):
            if parser.breakdown:  # the first parser that declares a cycle breakdown
                figures.save(
                    figures.cycle_breakdown(
                        summary, parser.name, list(parser.breakdown), parser.units.get(parser.breakdown[0], "")
                    ),
                    Path(smk.output.png).with_suffix(""),
                )
                print(f"cycle breakdown of {parser.name}: {', '.join(parser.breakdown)}", file=progress)
                return
