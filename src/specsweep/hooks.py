"""The bodies of the Snakefile's handlers: what a run says and keeps before its first job (``onstart``), after
its last (``onsuccess``) and when a job failed (``onerror``).

workflow/rules/common.smk hands these plain data (the configurations a run measures, the benchmark settings,
whether the summary job ran): they never see Snakemake's objects, so they are tested without a workflow. Paths
are the results tree's (``record/results``), under the working folder as the rules write them.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from specsweep.record import results
from specsweep.record.configuration import Configuration


def print_walltime(
    measuring: Sequence[str],
    configurations: dict[str, Configuration],
    measurable: dict[str, Configuration],
    benchmark: dict[str, Any],
    progress: TextIO,
) -> None:
    """onstart: the expected wall time of the sessions this run measures (``measuring``, each in
    ``measurable``: the design's sessions and the confirmation sessions), before the first launch; the whole
    design's power, read before this sweep's summary replaces the earlier one; its sequential and confirming
    sessions."""
    from specsweep.analyse import confirm, sequential
    from specsweep.plan import detectable, walltime
    from specsweep.plan.load_levels import levels_of

    if not measuring:
        return
    try:
        table, _ = walltime.report({name: measurable[name] for name in measuring}, benchmark)
        table += detectable.lines(configurations, benchmark, results.SUMMARY)
        table += sequential.plan_lines(configurations, benchmark)
        table += confirm.plan_lines(benchmark["confirm_sessions"], len(levels_of(benchmark)))
    except Exception as error:  # an estimate must never stop the measurements
        table = [f"specsweep: no wall-time estimate ({error!r})"]
    print("\n".join(table), file=progress)


def keep_previous_sessions(
    measuring: Iterable[tuple[str, Sequence[str]]],
    configurations: dict[str, Configuration],
    config: dict[str, Any],
    progress: TextIO,
) -> None:
    """onstart: before Snakemake deletes the outputs of a measuring job about to run (``measuring``: each
    one's configuration and its rule's log files), keep them in results/<cfg>/history/<launched_at>/
    (measurements are never deleted by the pipeline), with the secrets of its environment redacted."""
    from specsweep.plan.references import declared_values
    from specsweep.record import history
    from specsweep.record.redact import redact_values, secret_values

    declared = declared_values(config)
    for name, logs in measuring:
        env = {**os.environ, **configurations[name].env}
        by_name = secret_values({k: v for k, v in env.items() if isinstance(v, str)})
        history.keep_previous_session(
            name, progress, redact=lambda log, by_name=by_name: redact_values(log, by_name, declared)
        )
        # the previous attempt's log, renamed after its time: a job that fails before its session writes one
        # must not show it as if it explained this failure
        for log in map(Path, logs):
            if log.exists():
                stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(log.stat().st_mtime))
                log.rename(log.with_name(f"{log.stem}.{stamp}Z{log.suffix}"))


def print_conclusion(
    made_summary: bool,
    confirming: bool,
    config_files: Sequence[str],
    progress: TextIO,
    rounds: tuple[int, int] | None = None,
) -> None:
    """onsuccess: when this run made results/summary.csv (``made_summary``), what it concludes, last on the
    console: best configuration, significance, noisy ones, the sessions the rounds saved (``rounds``: sessions
    measured and planned, with benchmark.sessions {min, max}), the setting per load level, the next values worth
    measuring, the confirmed winner (``confirming``: benchmark.confirm_sessions is on), the files."""
    from specsweep.analyse import conclusion, confirm, loadbest, schedule, search, sequential

    if not made_summary or not os.path.exists(results.SUMMARY):  # --touch, --dry-run: nothing to conclude
        return
    text = conclusion.lines(conclusion.read(results.SUMMARY), results.ROOT, config_files)
    if rounds is not None:
        text[-1:-1] = sequential.saved_lines(*rounds)
    if os.path.exists(results.LOAD_TABLE):
        text[-1:-1] = loadbest.conclusion_lines(results.LOAD_TABLE)
    if os.path.exists(results.SPECULATION_SCHEDULE):
        text[-1:-1] = schedule.conclusion_lines(results.SPECULATION_SCHEDULE)
    if os.path.exists(results.NEXT_VALUES):
        text[-1:-1] = search.conclusion_lines(results.NEXT_VALUES, config_files)
    if confirming and os.path.exists(results.CONFIRMATION):
        text[-1:-1] = confirm.conclusion_lines(results.CONFIRMATION)
    print("\n".join(text), file=progress)


def summarise_what_finished(
    configurations: dict[str, Configuration],
    config: dict[str, Any],
    since: float,
    command: Sequence[str],
    slurm_logs: str,
    marker: str,
    progress: TextIO,
) -> None:
    """onerror, when the run measured: every configuration in results/summary.csv (failed ones with their
    evidence since ``since``, this run's start), a node lost under a session with the ``command`` that resumes,
    and the lines holding ``marker`` of jobs that failed on their node before their rule's log existed."""
    from specsweep.analyse import incomplete
    from specsweep.measure import claim, cluster

    benchmark = config["benchmark"]
    try:
        incomplete.write_summary(
            configurations,
            benchmark["runs"],
            results.ROOT,
            benchmark,
            config.get("profile_parsers", {}),
            progress,
            since=since,  # evidence older than this run is an earlier attempt's
        )
    except Exception as error:  # a report of a failure must not hide the failure itself
        print(f"specsweep: no partial summary ({error!r})", file=progress)
    for name in configurations:
        if why := claim.orphaned(Path(results.configuration_dir(name))):
            print(
                f"specsweep: {name}: {why}; its session may still run there. The next attempt keeps what it "
                f"finished in results/{name}/failed/ and measures {name} again on a working node: rerun the "
                f"same command ({shlex.join(command)})",
                file=progress,
            )
    for line in cluster.job_log_lines(slurm_logs, since, marker):
        print(f"specsweep: a job failed on its node: {line}", file=progress)
