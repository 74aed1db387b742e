"""Measure one configuration: launch, wait, check, warm up, run N generations, stop.

This is the body of the one-job-per-configuration rule. Everything a run produces is
written as soon as it exists, and on failure the partial results are copied to
``failed/<timestamp>/`` beside the outputs, where Snakemake does not delete them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from specsweep.engines import adapter, provenance_packages
from specsweep.engines.base import Engine, EngineResources
from specsweep.engines.external import attach
from specsweep.engines.server import (
    ServerError,
    StaleGroup,
    describe_listeners,
    exit_description,
    exposure_warning,
    free_port,
    log_tail,
    managed_server,
    port_in_use,
    wait_until_ready,
)
from specsweep.engines.server import _Terminated as Terminated  # one exception for a termination signal
from specsweep.measure import claim as claims
from specsweep.measure import client, evidence, gpu, request, telemetry
from specsweep.measure.adaptive import next_step
from specsweep.measure.engine_packages import versions_as_launched
from specsweep.measure.evidence import SessionPaths
from specsweep.measure.hiding import Hidden
from specsweep.measure.machine import snapshot as machine_snapshot
from specsweep.measure.placement import physical_gpus, placement, select_gpus
from specsweep.measure.progress import SessionProgress, eta
from specsweep.measure.rate_check import DEFAULT_TOLERANCE_PCT, exclusion_reason
from specsweep.measure.rate_search import judge, search
from specsweep.measure.request import RunError
from specsweep.plan import references
from specsweep.plan.config import Configuration
from specsweep.plan.environment import Policy
from specsweep.plan.load_levels import (
    REQUEST_RATE,
    LoadLevel,
    arrivals_of,
    levels_of,
    warmup_windows,
)
from specsweep.plan.rate_search import objectives_of, rate_search_of
from specsweep.plan.walltime import load_windows_left
from specsweep.plan.workload import Prompt, read_workload
from specsweep.record import history, results
from specsweep.record.atomic import ErrorReserve
from specsweep.record.clock import now_iso
from specsweep.record.locks import measuring
from specsweep.record.redact import (
    redact_argv,
    redact_env,
    redact_mapping,
)
from specsweep.record.results import (
    Launch,
    RateProbe,
    Window,
    extra_run_file,
    extra_runs_dir,
)
from specsweep.record.segments import LOAD, RUN, TEARDOWN, WARMUP, segment
from specsweep.record.speculation import count as count_or_none


def measure_configuration(
    configuration: Configuration,
    settings: dict[str, Any],
    engine_record: dict[str, Any],
    model_records: dict[str, dict[str, Any]],
    benchmark: dict[str, Any],
    prompts: Path,
    paths: SessionPaths,
    progress: TextIO = sys.stderr,
    environment: Policy | None = None,
) -> None:
    """The bench job: the engine adapter given its built executable and obtained models, then ``measure``.
    ``environment``: the sweep's pass-through list and swept variables (environment.policy_of)."""
    executable = engine_record.get("executable")
    if executable and not Path(executable).is_file():
        raise FileNotFoundError(
            f"{executable} is gone from the cache; rebuild it with `snakemake --cores 1 --forcerun engine all`"
        )
    resources = EngineResources(
        executable=executable,
        model=model_records[settings["model"]]["path"] if settings.get("model") else None,
        draft_model=model_records[configuration.draft_model]["path"] if configuration.draft_model else None,
    )
    engine = adapter(configuration.kind, settings, resources)
    session = Session(
        configuration,
        engine,
        benchmark,
        read_workload(prompts),
        settings["host"],
        settings["port"],
        paths,
        environment or Policy(),
    )
    measure(session, progress)


@dataclass(frozen=True)
class Session:
    """One server session: the configuration on its engine, what each run does, and where results go."""

    configuration: Configuration
    engine: Engine
    benchmark: dict[str, Any]
    prompts: list[Prompt]
    host: str
    port: int  # 0: a free one, picked at launch
    paths: SessionPaths
    # what the engine's environment is made of (default: nothing passed through, only this configuration's
    # variables count as swept)
    environment: Policy = field(default_factory=Policy)


def measure(session: Session, progress: TextIO = sys.stderr) -> None:
    """Run the whole session for one configuration; raise with a clear message on any failure."""
    name, paths = session.configuration.name, session.paths
    stale = StaleGroup(paths.stale_pgid)
    configuration, engine = session.configuration, session.engine
    # Whatever a failure says (a server echoing its argv into the log tail) passes through these first.
    engine.check_api_key(configuration.engine)
    references.resolve(configuration)  # a from_env variable that is not set: said before anything starts
    hidden = Hidden.of(configuration, engine, os.environ)
    said = SessionProgress(name, progress)
    with measuring(progress, name), _first_termination_only() as terminating:
        claim = claims.take(paths.failed_root.parent, evidence.evidence_of(paths), said)
        # Only now: the configuration's claim was free or its holder is gone (a live holder, e.g. a second working
        # folder sharing these results, raised ClaimHeld above), so a recorded server still running is a leftover.
        try:
            if (pgid := stale.stop_if_running(float(session.benchmark["stop_grace_s"]))) is not None:
                said.leftover_stopped(pgid)
        except BaseException:
            claim.release()
            raise
        session = replace(session, paths=(paths := replace(paths, claim=claim)))
        reserve = ErrorReserve(paths.failed_root.parent)
        try:
            _session(session, stale, said)
            paths.check_claim()  # taken over after its last run: its outputs are the new attempt's
        except BaseException as raised:
            terminating.append(raised)  # from now on a SIGTERM must not cut the post-mortem short
            error = hidden.error(raised)
            said.failed(error)
            try:
                said.kept(evidence.keep_for_post_mortem(paths, error, reserve))
            except OSError as keeping:  # e.g. a full disk: said, and the original error is still the one raised
                said.not_kept(keeping)
            if isinstance(raised, claims.ClaimLost) and (snakemakes := claims.abandon()):
                said.snakemake_stopped(snakemakes)
            if error is raised:
                raise
            raise error from None
        finally:
            reserve.release()
            shutil.rmtree(paths.shadow, ignore_errors=True)
            claim.release()


@contextlib.contextmanager
def _first_termination_only() -> Iterator[list[BaseException]]:
    """SIGTERM/SIGHUP stop the session once; later ones are ignored so its evidence is kept.

    A cancelled or timed-out Slurm job signals every process of its step, and Snakemake on the node
    then signals its job again: without this the second SIGTERM killed the session after the engine
    was stopped but before ``failed/`` was written. A signal that arrives while an exception is on its
    way out (the first termination, stopping the engine, writing launch.json) is ignored too; append
    to the list to ignore every further one.
    """
    terminating: list[BaseException] = []

    def once(signum: int, _frame: object) -> None:
        if not terminating and sys.exc_info()[1] is None:
            terminating.append(Terminated(f"received {signal.Signals(signum).name}"))
            raise terminating[0]

    previous = {s: signal.signal(s, once) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield terminating
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _session(session: Session, stale: StaleGroup, progress: SessionProgress) -> None:
    """Launch (or attach), wait until ready, warm up, measure the runs and the load levels, stop."""
    configuration, engine, benchmark = session.configuration, session.engine, session.benchmark
    paths = session.paths
    port = _free_checked_port(session)
    base_url = engine.base_url(session.host, port)
    launch, argv, env, hidden = _launch_record(session, port, progress)
    folder = paths.failed_root.parent  # a killed session's links (any attempt's): its runs and windows, kept
    history.keep_leftover_session(folder.name, progress.stream, folder.parent, hidden.log)
    for links in folder.glob(results.SESSION_LINKS + "*"):  # kept in history/ just above; this attempt holds the claim
        shutil.rmtree(links, ignore_errors=True)
    if warning := claims.replaced_warning(paths.claim) if paths.claim else None:
        launch.warnings.append(warning)  # summary.csv's warnings: a node failed, this is the new measurement
    evidence.write_evidence(paths, paths.launch, launch.to_json())
    paths.log.unlink(missing_ok=True)
    shutil.rmtree(extra_runs_dir(paths.runs[0].parent), ignore_errors=True)  # a previous session's extras
    memory = _gpu_memory_record(configuration, benchmark)
    if memory is not None:
        memory.read("before_launch")
    try:
        progress.launching(engine.kind, base_url)
        server = (
            managed_server(argv, env, paths.log, stale, float(benchmark["stop_grace_s"]))
            if engine.launches
            else attach(engine.settings, paths.log, configuration.engine)
        )
        with server as process:
            evidence.link_log(paths)
            launch.pid = process.pid
            prompts = _until_ready(session, process, stale, base_url, port, launch, progress)
            _warm_up(session, process, base_url, prompts, launch)
            if memory is not None:
                memory.read("while_serving")
            _measure_runs(session, process, base_url, prompts, launch, progress)
            # After the last run (its trailing lines stay with it); each load window then gets its own.
            launch.log_segments.append(segment(LOAD, None, evidence.log_position(process, paths.log)))
            _measure_load(session, prompts, base_url, launch, process, progress)
            _search_rate(session, prompts, base_url, launch, process, progress)
            launch.log_segments.append(segment(TEARDOWN, None, evidence.log_position(process, paths.log)))
            launch.status = "completed"
    finally:
        launch.stopped_at = now_iso()
        if launch.status != "completed":
            launch.status = "failed"
        unreleased = _check_gpu_release(memory, benchmark, launch)
        _record_stopped(session, launch, hidden, progress)
    if unreleased is not None:
        raise unreleased


def _free_checked_port(session: Session) -> int:
    """The port to launch on: the configured one if it is free, or a free one (port 0 or unset)."""
    configuration, engine, host, port = session.configuration, session.engine, session.host, session.port
    if engine.launches:  # an external endpoint is already listening: nothing to pick or check
        port = port or free_port(host)
        if port_in_use(host, port):
            raise ServerError(
                f"{host}:{port} is already in use by {describe_listeners(port)}; stop it, or set "
                f"engines/{configuration.engine}/port: 0 to pick a free port"
            )
    return port


def _launch_record(
    session: Session, port: int, progress: SessionProgress
) -> tuple[Launch, list[str], dict[str, str], list[str]]:
    """What is launched (argv, env, the values to hide) and the launch record that describes it, redacted."""
    configuration, engine, benchmark, host = session.configuration, session.engine, session.benchmark, session.host
    # Secrets given as {from_env: NAME} are read here, in the job, and redacted wherever argv or env is written.
    launched = references.resolve(configuration)
    # the GPUs: Slurm's under a Slurm job, else engines/<e>/gpus (placement.select_gpus)
    gpus = select_gpus(configuration.engine, engine.settings.get("gpus"), launched.env, os.environ)
    launched = replace(launched, env={**launched.env, **gpus.env()})
    argv = engine.command(launched, host, port)
    # the engine's clean environment (environment.py), with what the adapter itself sets (an API key, vLLM's
    # stats interval) under the configuration's own (the owned flags keep an API key out of it)
    built, inherited = session.environment.build(
        replace(launched, env={**engine.launch_env(), **launched.env}), os.environ
    )
    env = built.values
    hidden = Hidden.of(configuration, engine, os.environ).launched(argv, env)
    # An external endpoint is bound by someone else: only a server we launch can be exposed by us.
    warnings = [w for w in [exposure_warning(host, configuration.engine)] if w and engine.launches] + inherited
    warnings += gpus.warnings
    for warning in warnings:
        progress.warning(warning)
    launch = Launch(
        configuration=redact_mapping(configuration.as_params()),  # its env may hold a token
        benchmark=redact_mapping(benchmark),  # with the configuration: what these runs were measured under
        argv=hidden.written(redact_argv(argv)),
        port=port,
        host=host,
        env_set=redact_env(configuration.env),
        env_unset=list(configuration.unset_env),
        env=hidden.written(redact_env(env)),
        env_origin=built.origins,
        launched_at=now_iso(),
        warnings=warnings,
        machine=machine_snapshot(
            engine_packages=provenance_packages()
        ),  # code, software, host and GPUs as they are while measured
    )
    launch.placement = placement(launch.machine)  # node, GPU models, driver, Slurm job
    launch.placement |= {"gpus": gpus.devices, "gpus_from": gpus.source, "gpus_used": physical_gpus(gpus.devices)}
    if engine.launches:  # the engine's packages as its own Python sees them (a PYTHONPATH install)
        launch.machine["engine_packages"] = versions_as_launched(argv, env, engine.packages)
    return launch, argv, env, hidden


def _until_ready(
    session: Session,
    process: Any,
    stale: StaleGroup,
    base_url: str,
    port: int,
    launch: Launch,
    progress: SessionProgress,
) -> list[Prompt]:
    """Wait until the server answers, check what it serves, and return the prompts as it will get them."""
    configuration, engine, benchmark, paths = session.configuration, session.engine, session.benchmark, session.paths
    prompts = session.prompts
    timeout_s = float(benchmark["ready_timeout_s"])
    ready_s = wait_until_ready(
        process,
        lambda: engine.is_ready(base_url),
        timeout_s,
        paths.log,
        port=port if engine.launches else None,
        waiting=progress.ready_wait(timeout_s, lambda: log_tail(paths.log, 1)),
    )
    if engine.launches:  # workers and helpers exist now: a later job can stop exactly them
        stale.track(process.pid)
    launch.ready_s = round(ready_s, 3)
    launch.engine = engine.check_started(base_url, configuration)
    launch.status = "ready"
    evidence.write_evidence(paths, paths.launch, launch.to_json())
    if launch.engine.get("warning"):
        progress.warning(launch.engine["warning"])
    if benchmark.get("chat_template"):  # rendered by this server: the served model's template
        prompts = [replace(p, text=engine.apply_chat_template(base_url, p.text)) for p in prompts]
        first = Hidden.of(configuration, engine, {}).prompt(prompts[0].text)  # a prompt may hold a declared one
        launch.chat_template = {"first_prompt": first, "rendered_by": engine.chat_template_route}
    progress.ready(ready_s, benchmark["warmup_requests"])
    return prompts


def _warm_up(session: Session, process: Any, base_url: str, prompts: list[Prompt], launch: Launch) -> None:
    engine, benchmark, paths = session.engine, session.benchmark, session.paths
    segments = launch.log_segments = []  # where each request starts in server.log (segments.py)
    for w in range(benchmark["warmup_requests"]):
        segments.append(segment(WARMUP, w, evidence.log_position(process, paths.log)))
        with _server_death_named(process, f"warmup request {w + 1}", paths.log, base_url):
            request.generate(
                engine, base_url, prompts[w % len(prompts)].text, benchmark["warmup_max_tokens"], benchmark
            )


def _measure_runs(
    session: Session, process: Any, base_url: str, prompts: list[Prompt], launch: Launch, progress: SessionProgress
) -> None:
    """The declared runs, and adaptive extra ones; each run record is written as soon as it is measured."""
    engine, benchmark, paths = session.engine, session.benchmark, session.paths
    rates: list[float] = []
    declared = len(paths.runs)
    watch = telemetry.watch(benchmark, session.configuration.env)
    progress.watching(watch.describe())
    runs_started = time.monotonic()
    while (run_path := _next_run_path(paths, len(rates), rates, benchmark, launch)) is not None:
        paths.check_claim()
        index = len(rates)
        label = f"run {index + 1}/{declared}" if index < declared else f"run {index + 1} (adaptive)"
        launch.log_segments.append(segment(RUN, index, evidence.log_position(process, paths.log)))
        with (
            _server_death_named(process, f"{label} ({index} completed)", paths.log, base_url),
            watch.sampled() as sampler,
        ):
            record = request.measured_run(engine, base_url, prompts, index, benchmark)
        tolerance = float(benchmark.get("rate_tolerance_pct", DEFAULT_TOLERANCE_PCT))
        record = replace(
            record, excluded=exclusion_reason(record, tolerance), telemetry=telemetry.sampled_record(sampler)
        )
        progress.measured_under(label, record.telemetry)
        evidence.write_evidence(paths, run_path, record.to_json())
        rates.append(record.decode_tokens_per_s)
        elapsed = time.monotonic() - runs_started
        windows = load_windows_left(benchmark, elapsed / len(rates))  # measured after the runs, at this pace
        pace = eta(len(rates), declared, elapsed, windows) if index < declared else ""
        progress.run_done(label, record, pace)
        if record.excluded:
            progress.run_excluded(label, run_path, record.excluded)
        if record.speculation_refused:
            progress.warning(f"{label}: {record.speculation_refused}; not used")
        if record.counters_quantised and not any("quantised" in w for w in launch.warnings):
            launch.warnings.append(
                f"/metrics prints {', '.join(record.counters_quantised)} past 10^6 with 6 significant "
                f"digits: per-run differences are quantised, so they are not used (the response's own "
                f"counts are; verify steps stay unknown)"
            )
            progress.warning(launch.warnings[-1])
        if process.poll() is not None:
            raise ServerError(f"the server exited with status {process.returncode} during the runs")
    progress.runs_done(launch.repetitions["stopped_because"])


def _record_stopped(session: Session, launch: Launch, hidden: Hidden, progress: SessionProgress) -> None:
    """After the stop: the log redacted and the final launch record written, without hiding the first error."""
    paths = session.paths
    try:
        # the log first: redaction moves the recorded segment starts, which launch.json then holds
        # (the shadow link is the unredacted original once the log is rewritten: redacted too)
        log = paths.own(paths.log)  # an orphaned session: its log as kept, never the next attempt's
        shifted_by_log = log.exists()
        evidence.redact_log(log, hidden, launch.log_segments or [])
        shadow = evidence.shadow_of(paths, paths.log)
        evidence.redact_log(shadow, hidden, [] if shifted_by_log else launch.log_segments or [])
        evidence.write_evidence(paths, paths.launch, launch.to_json())
    except OSError as problem:  # e.g. a full disk: while a failure propagates, it must stay the error raised
        if launch.completed:
            raise
        progress.not_recorded(paths.launch, problem)


def _next_run_path(
    paths: SessionPaths, index: int, rates: list[float], benchmark: dict[str, Any], launch: Launch
) -> Path | None:
    """The declared runs first; then, with ``benchmark.adaptive``, extra runs until its target."""
    if index < len(paths.runs):
        return paths.runs[index]
    adaptive = benchmark.get("adaptive")
    if adaptive:
        decision = next_step(rates, float(adaptive["ci_half_width_pct"]), int(adaptive["max_runs"]))
        if decision.more:
            return extra_run_file(paths.runs[0].parent, index)
        reason = decision.reason
    else:
        reason = f"{index} runs (benchmark.runs; no adaptive repetitions)"
    launch.repetitions = {"runs": index, "stopped_because": reason}
    return None


def _gpu_memory_record(configuration: Configuration, benchmark: dict[str, Any]) -> gpu.MemoryRecord | None:
    """Watch the GPUs this configuration may use (its CUDA_VISIBLE_DEVICES, else all), if any exist."""
    mode = benchmark.get("gpu_memory_check", "auto")
    if mode == "never" or (mode == "auto" and not gpu.available()):
        return None
    if not gpu.available():
        raise RuntimeError(
            "benchmark.gpu_memory_check is 'always' but nvidia-smi is not on PATH; "
            "install the NVIDIA driver tools or set it to 'auto'"
        )
    visible = configuration.env.get("CUDA_VISIBLE_DEVICES", "")
    watched = (
        [int(i) for i in visible.split(",")]
        if visible and all(i.strip().isdigit() for i in visible.split(","))
        else None
    )
    return gpu.MemoryRecord(gpus=watched)


def _check_gpu_release(
    memory: gpu.MemoryRecord | None, benchmark: dict[str, Any], launch: Launch
) -> gpu.GpuMemoryNotReleased | None:
    """After teardown: wait until GPU memory is back to its pre-launch level; record the readings."""
    if memory is None or "before_launch" not in memory.phases:
        return None
    try:
        memory.wait_released(
            float(benchmark.get("gpu_release_timeout_s", 30)), int(benchmark.get("gpu_release_tolerance_mib", 64))
        )
        return None
    except gpu.GpuMemoryNotReleased as error:
        launch.status = "failed"
        return error
    finally:
        launch.gpu_memory = memory.as_dict()


@contextlib.contextmanager
def _server_death_named(
    process: subprocess.Popen[bytes], phase: str, log: Path, base_url: str | None = None
) -> Iterator[None]:
    """A request that fails because the server died says so (with the log tail), not just 'connection reset';
    a quiet stream of a server that exited or stopped listening (a signal) ends at once (client.watching)."""
    try:
        with client.watching(lambda: _server_gone(process, base_url)):
            yield
    except Exception as error:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=1.0)  # the client may notice the dropped connection before the exit is reaped
        if process.returncode is None:
            raise
        raise ServerError(
            f"the server died during {phase} with {exit_description(process.returncode)}: "
            f"{error}; last lines of {log}:\n{log_tail(log)}"
        ) from error


def _server_gone(process: Any, base_url: str | None) -> str | None:
    if process.poll() is not None:
        return f"the server exited with {exit_description(process.returncode)}"
    url = urlsplit(base_url) if base_url else None
    return client.listening(url.hostname, url.port) if url and url.hostname and url.port else None


def _measure_load(
    session: Session,
    prompts: list[Prompt],
    base_url: str,
    launch: Launch,
    process: subprocess.Popen[bytes],
    progress: SessionProgress,
) -> None:
    """Every load level's windows, after the single-request runs, on the same server."""
    levels = levels_of(session.benchmark)
    if not levels:
        return
    paths = session.paths
    slots = count_or_none((launch.engine or {}).get("total_slots"))
    wanted = max((level.in_flight or 0 for level in levels), default=0)
    if slots is not None and slots < wanted:  # llama.cpp -np unset: the server chose its slots itself
        raise RunError(
            f"the server has {slots} slot(s) (/props total_slots) but benchmark.load.concurrency asks for "
            f"{wanted}; set -np {wanted} (or more) in the configuration's args"
        )
    watch = telemetry.watch(session.benchmark, session.configuration.env)
    sent = _SentWindow(session, prompts, base_url, launch, process, progress)
    for level in levels:
        measured = [path for path in paths.windows[level.label] if not results.is_warmup_window(path)]
        for path in sorted(paths.windows[level.label], key=lambda p: p in measured):  # the warmup window first
            warmup = path not in measured
            # the warmup window sends window 0's prompts on its schedule, and is kept but in no table
            window = 0 if warmup else measured.index(path)
            label = f"load {level.label} {'warmup window' if warmup else f'window {window + 1}/{len(measured)}'}"
            phase, index = (WARMUP, None) if warmup else (LOAD, window)  # the warmup window's log rows count nowhere
            record = sent.measure(level, window, warmup, label, (phase, index), watch)
            progress.measured_under(label, record.telemetry)
            evidence.write_evidence(paths, path, record.to_json())
            progress.window_done(label, record)
            if process.poll() is not None:
                raise ServerError(f"the server exited with status {process.returncode} during {label}")


@dataclass(frozen=True)
class _SentWindow:
    """One window of requests on the running server, as the load levels and the rate search's probes send
    them: its log segment recorded first, a server that dies named, a progress line while it lasts (a window
    may last minutes), and the telemetry sampled when a watch is given."""

    session: Session
    prompts: list[Prompt]
    base_url: str
    launch: Launch
    process: subprocess.Popen[bytes]
    progress: SessionProgress

    def measure(
        self,
        level: LoadLevel,
        window: int,
        warmup: bool,
        label: str,
        segment_of: tuple[str, int | None],
        watch: telemetry.Watch | None = None,
    ) -> Window:
        session, paths = self.session, self.session.paths
        paths.check_claim()
        start = evidence.log_position(self.process, paths.log)
        self.launch.log_segments.append(segment(*segment_of, start, level.label))
        requests = int(session.benchmark["load"]["requests_per_window"])
        with contextlib.ExitStack() as stack:
            stack.enter_context(_server_death_named(self.process, label, paths.log, self.base_url))
            sampler = stack.enter_context(watch.sampled()) if watch is not None else None
            ongoing = stack.enter_context(self.progress.window(label, requests))
            record = request.measured_window(
                session.engine, session.benchmark, self.prompts, self.base_url, level, window, ongoing.advance, warmup
            )
        return record if sampler is None else replace(record, telemetry=telemetry.sampled_record(sampler))


def _search_rate(
    session: Session,
    prompts: list[Prompt],
    base_url: str,
    launch: Launch,
    process: subprocess.Popen[bytes],
    progress: SessionProgress,
) -> None:
    """The SLO rate search (benchmark.load.rate_search), after the load levels, on the same server: each
    probe one window at its rate (window 0's prompts and schedule), after a warmup window as a level's."""
    spec, paths = rate_search_of(session.benchmark), session.paths
    if spec is None or paths.rate_search is None:
        return
    objectives = objectives_of(session.benchmark["load"].get("slo") or {})

    def probe(rate: float) -> RateProbe:
        level = LoadLevel(REQUEST_RATE, rate)
        sent = _SentWindow(session, prompts, base_url, launch, process, progress)
        for warmup in [True] * warmup_windows(session.benchmark) + [False]:
            label = f"rate search {level.label}{' warmup window' if warmup else ''}"
            # the engine's log rows of a probe count in no table, as a warmup window's
            window = sent.measure(level, 0, warmup, label, (WARMUP, None))
        judged = judge(window, rate, objectives)
        progress.probe_done(label, judged)
        return judged

    record = search(spec, probe, arrivals_of(session.benchmark))
    evidence.write_evidence(paths, paths.rate_search, record.to_json())
    progress.rate_found(record.found_rate, spec.low, spec.resolution)
