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
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from specsweep.engines import adapter, provenance_packages
from specsweep.engines.base import Engine, EngineResources, GenerationRequest, render_flags
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
from specsweep.measure import client, gpu, telemetry
from specsweep.measure.adaptive import next_step
from specsweep.measure.client import StreamedResponse, stream_post, timings_from_arrivals
from specsweep.measure.engine_packages import versions_as_launched
from specsweep.measure.load import run_window, steady_interval
from specsweep.measure.machine import snapshot as machine_snapshot
from specsweep.measure.placement import physical_gpus, placement, select_gpus
from specsweep.measure.progress import ReadyWait, eta
from specsweep.measure.rate_check import DEFAULT_TOLERANCE_PCT, exclusion_reason
from specsweep.measure.rate_search import judge, search
from specsweep.plan import references
from specsweep.plan.config import Configuration
from specsweep.plan.environment import Policy
from specsweep.plan.load_levels import (
    CONCURRENCY,
    REQUEST_RATE,
    LoadLevel,
    arrivals_of,
    levels_of,
    warmup_windows,
    window_seed,
)
from specsweep.plan.rate_search import objectives_of, rate_search_of
from specsweep.plan.walltime import load_windows_left
from specsweep.plan.workload import Prompt, read_workload
from specsweep.record import history, results
from specsweep.record.arrivals import encode_arrivals
from specsweep.record.atomic import ErrorReserve, atomic_write, keep_copy, write_json
from specsweep.record.cache import sha256_bytes
from specsweep.record.clock import now_iso, now_stamp
from specsweep.record.locks import measuring
from specsweep.record.ongoing import Ongoing
from specsweep.record.rates import END_TO_END_OUTPUT, SINGLE_REQUEST_DECODE
from specsweep.record.redact import (
    REDACTED,
    redact_argv,
    redact_env,
    redact_mapping,
    redact_values,
    secret_arg_values,
    secret_values,
    without_secrets,
)
from specsweep.record.results import (
    Launch,
    RateProbe,
    Run,
    Window,
    WindowRequest,
    extra_run_file,
    extra_runs_dir,
    with_extra_runs,
)
from specsweep.record.segments import LOAD, RUN, TEARDOWN, WARMUP, segment
from specsweep.record.speculation import count as count_or_none
from specsweep.record.speculation import usable_speculation


class RunError(RuntimeError):
    pass


@dataclass(frozen=True)
class SessionPaths:
    log: Path
    launch: Path
    runs: list[Path]
    stale_pgid: Path
    failed_root: Path
    # load windows by level label (empty without benchmark.load)
    windows: dict[str, list[Path]] = field(default_factory=dict)
    # this attempt's claim on the folder (claim.py), once taken
    claim: claims.Claim | None = None
    # the SLO rate search's record (benchmark.load.rate_search; None without one)
    rate_search: Path | None = None

    @property
    def shadow(self) -> Path:
        """Hard links to the session's evidence under names Snakemake does not know: on a cluster,
        Snakemake on the node deletes a cancelled job's outputs while the session is still keeping them.
        One per attempt (.session-<attempt>): an orphaned session on a failed node never writes into the
        next attempt's."""
        return self.failed_root.parent / f"{results.SESSION_LINKS}-{claims.attempt_key()}"

    def own(self, path: Path) -> Path:
        """Where this attempt writes ``path``: the path itself, or, once a newer attempt took the
        configuration over, the same name in the failed/ folder this attempt's evidence was moved to."""
        return self.claim.redirect(path) if self.claim else path

    def check_claim(self) -> None:
        """Stop (ClaimLost) when a newer attempt took the configuration over: this session was orphaned."""
        if self.claim:
            self.claim.check()

    @classmethod
    def of(cls, name: str, runs: int, windows: list[str] | None = None, rate_search: str | None = None) -> SessionPaths:
        """A configuration's session files in the results tree (the bench rule's outputs and more)."""
        return cls(
            log=Path(results.server_log(name)),
            launch=Path(results.launch_file(name)),
            runs=[Path(results.run_file(name, i)) for i in range(runs)],
            # per node: a group left on one node can be stopped only there (a new attempt elsewhere must
            # not signal whatever has that pid on its own node)
            stale_pgid=Path(results.stale_pgid_file(name)).with_suffix(f".{claims.this_node()}.pgid"),
            failed_root=Path(results.failed_dir(name)),
            windows=_by_level(windows or []),
            rate_search=Path(rate_search) if rate_search else None,
        )

    def all_windows(self) -> list[Path]:
        return [path for level in self.windows.values() for path in level]


def _by_level(windows: list[str]) -> dict[str, list[Path]]:
    """The bench rule's window outputs (results.window_file) grouped by level label, in order."""
    grouped: dict[str, list[Path]] = {}
    for window in map(Path, windows):
        grouped.setdefault(window.parent.name, []).append(window)
    return grouped


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
    secrets = secret_values({**os.environ, **configuration.env}) + secret_arg_values(
        render_flags(configuration.args, {})
    )
    declared = [engine.api_key() or "", *references.values_of(configuration)]  # whatever their form
    with measuring(progress, name), _first_termination_only() as terminating:
        claim = claims.take(paths.failed_root.parent, _evidence(paths), progress, name)
        # Only now: the configuration's claim was free or its holder is gone (a live holder, e.g. a second working
        # folder sharing these results, raised ClaimHeld above), so a recorded server still running is a leftover.
        try:
            if (pgid := stale.stop_if_running(float(session.benchmark["stop_grace_s"]))) is not None:
                print(
                    f"{name}: stopped a server left behind by an interrupted job (process group {pgid})", file=progress
                )
        except BaseException:
            claim.release()
            raise
        session = replace(session, paths=(paths := replace(paths, claim=claim)))
        reserve = ErrorReserve(paths.failed_root.parent)
        try:
            _session(session, stale, progress)
            paths.check_claim()  # taken over after its last run: its outputs are the new attempt's
        except BaseException as raised:
            terminating.append(raised)  # from now on a SIGTERM must not cut the post-mortem short
            error = without_secrets(raised, secrets, declared)
            print(f"{name}: FAILED ({error})", file=progress, flush=True)  # the original error, whatever follows
            try:
                kept = _keep_for_post_mortem(paths, error, reserve)
                print(f"{name}: partial results kept in {kept}", file=progress, flush=True)
            except OSError as keeping:  # e.g. a full disk: said, and the original error is still the one raised
                print(f"{name}: WARNING: could not keep all partial results ({keeping})", file=progress, flush=True)
            if isinstance(raised, claims.ClaimLost) and (snakemakes := claims.abandon()):
                print(
                    f"{name}: stopped this job's Snakemake (pid {', '.join(map(str, snakemakes))}) so that it "
                    f"deletes no output: they are the new attempt's",
                    file=progress,
                    flush=True,
                )
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


def _session(session: Session, stale: StaleGroup, progress: TextIO) -> None:
    """Launch (or attach), wait until ready, warm up, measure the runs and the load levels, stop."""
    configuration, engine, benchmark = session.configuration, session.engine, session.benchmark
    paths, name = session.paths, configuration.name
    port = _free_checked_port(session)
    base_url = engine.base_url(session.host, port)
    launch, argv, env, hidden = _launch_record(session, port, progress)
    folder = paths.failed_root.parent  # a killed session's links (any attempt's): its runs and windows, kept
    by_name = secret_values(env) + secret_arg_values(argv)
    history.keep_leftover_session(folder.name, progress, folder.parent, lambda log: redact_values(log, by_name, hidden))
    for links in folder.glob(results.SESSION_LINKS + "*"):  # kept in history/ just above; this attempt holds the claim
        shutil.rmtree(links, ignore_errors=True)
    if warning := claims.replaced_warning(paths.claim) if paths.claim else None:
        launch.warnings.append(warning)  # summary.csv's warnings: a node failed, this is the new measurement
    _write_evidence(paths, paths.launch, launch.to_json())
    paths.log.unlink(missing_ok=True)
    shutil.rmtree(extra_runs_dir(paths.runs[0].parent), ignore_errors=True)  # a previous session's extras
    memory = _gpu_memory_record(configuration, benchmark)
    if memory is not None:
        memory.read("before_launch")
    try:
        print(f"{name}: launching {engine.kind} on {base_url}", file=progress, flush=True)
        server = (
            managed_server(argv, env, paths.log, stale, float(benchmark["stop_grace_s"]))
            if engine.launches
            else attach(engine.settings, paths.log, configuration.engine)
        )
        with server as process:
            _link_log(paths)
            launch.pid = process.pid
            prompts = _until_ready(session, process, stale, base_url, port, launch, progress)
            _warm_up(session, process, base_url, prompts, launch)
            if memory is not None:
                memory.read("while_serving")
            _measure_runs(session, process, base_url, prompts, launch, progress)
            # After the last run (its trailing lines stay with it); each load window then gets its own.
            launch.log_segments.append(segment(LOAD, None, _log_position(process, paths.log)))
            _measure_load(session, prompts, base_url, launch, process, progress)
            _search_rate(session, prompts, base_url, launch, process, progress)
            launch.log_segments.append(segment(TEARDOWN, None, _log_position(process, paths.log)))
            launch.status = "completed"
    finally:
        launch.stopped_at = now_iso()
        if launch.status != "completed":
            launch.status = "failed"
        unreleased = _check_gpu_release(memory, benchmark, launch)
        _record_stopped(session, launch, argv, env, hidden, progress)
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
    session: Session, port: int, progress: TextIO
) -> tuple[Launch, list[str], dict[str, str], list[str]]:
    """What is launched (argv, env, the values to hide) and the launch record that describes it, redacted."""
    configuration, engine, benchmark, host = session.configuration, session.engine, session.benchmark, session.host
    # Secrets given as {from_env: NAME} are read here, in the job, and redacted wherever argv or env is written.
    launched = references.resolve(configuration)
    # the GPUs: Slurm's under a Slurm job, else engines/<e>/gpus (placement.select_gpus)
    gpus = select_gpus(configuration.engine, engine.settings.get("gpus"), launched.env, os.environ)
    launched = replace(launched, env={**launched.env, **gpus.env()})
    hidden = [*references.values_of(configuration), engine.api_key() or ""]
    argv = engine.command(launched, host, port)
    # the engine's clean environment (environment.py), with what the adapter itself sets (an API key, vLLM's
    # stats interval) under the configuration's own (the owned flags keep an API key out of it)
    built, inherited = session.environment.build(
        replace(launched, env={**engine.launch_env(), **launched.env}), os.environ
    )
    env = built.values
    # An external endpoint is bound by someone else: only a server we launch can be exposed by us.
    warnings = [w for w in [exposure_warning(host, configuration.engine)] if w and engine.launches] + inherited
    warnings += gpus.warnings
    for warning in warnings:
        print(f"{configuration.name}: WARNING: {warning}", file=progress, flush=True)
    launch = Launch(
        configuration=redact_mapping(configuration.as_params()),  # its env may hold a token
        benchmark=redact_mapping(benchmark),  # with the configuration: what these runs were measured under
        argv=_hide(redact_argv(argv), hidden),
        port=port,
        host=host,
        env_set=redact_env(configuration.env),
        env_unset=list(configuration.unset_env),
        env=_hide(redact_env(env), hidden),
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
    progress: TextIO,
) -> list[Prompt]:
    """Wait until the server answers, check what it serves, and return the prompts as it will get them."""
    configuration, engine, benchmark, paths = session.configuration, session.engine, session.benchmark, session.paths
    name, prompts = configuration.name, session.prompts
    timeout_s = float(benchmark["ready_timeout_s"])
    ready_s = wait_until_ready(
        process,
        lambda: engine.is_ready(base_url),
        timeout_s,
        paths.log,
        port=port if engine.launches else None,
        waiting=ReadyWait(name, timeout_s, progress, lambda: log_tail(paths.log, 1)),
    )
    if engine.launches:  # workers and helpers exist now: a later job can stop exactly them
        stale.track(process.pid)
    launch.ready_s = round(ready_s, 3)
    launch.engine = engine.check_started(base_url, configuration)
    launch.status = "ready"
    _write_evidence(paths, paths.launch, launch.to_json())
    if launch.engine.get("warning"):
        print(f"{name}: WARNING: {launch.engine['warning']}", file=progress, flush=True)
    if benchmark.get("chat_template"):  # rendered by this server: the served model's template
        prompts = [replace(p, text=engine.apply_chat_template(base_url, p.text)) for p in prompts]
        declared = [*references.values_of(configuration), engine.api_key() or ""]  # a prompt may hold one
        first = redact_values(prompts[0].text, [], declared)
        launch.chat_template = {"first_prompt": first, "rendered_by": engine.chat_template_route}
    print(
        f"{name}: ready after {ready_s:.1f} s; {benchmark['warmup_requests']} warmup request(s)",
        file=progress,
        flush=True,
    )
    return prompts


def _warm_up(session: Session, process: Any, base_url: str, prompts: list[Prompt], launch: Launch) -> None:
    engine, benchmark, paths = session.engine, session.benchmark, session.paths
    segments = launch.log_segments = []  # where each request starts in server.log (segments.py)
    for w in range(benchmark["warmup_requests"]):
        segments.append(segment(WARMUP, w, _log_position(process, paths.log)))
        with _server_death_named(process, f"warmup request {w + 1}", paths.log, base_url):
            _generate(engine, base_url, prompts[w % len(prompts)].text, benchmark["warmup_max_tokens"], benchmark)


def _measure_runs(
    session: Session, process: Any, base_url: str, prompts: list[Prompt], launch: Launch, progress: TextIO
) -> None:
    """The declared runs, and adaptive extra ones; each run record is written as soon as it is measured."""
    engine, benchmark, paths, name = session.engine, session.benchmark, session.paths, session.configuration.name
    rates: list[float] = []
    declared = len(paths.runs)
    watch = telemetry.watch(benchmark, session.configuration.env)
    print(f"{name}: {watch.describe()}", file=progress, flush=True)
    runs_started = time.monotonic()
    while (run_path := _next_run_path(paths, len(rates), rates, benchmark, launch)) is not None:
        paths.check_claim()
        index = len(rates)
        label = f"run {index + 1}/{declared}" if index < declared else f"run {index + 1} (adaptive)"
        launch.log_segments.append(segment(RUN, index, _log_position(process, paths.log)))
        with (
            _server_death_named(process, f"{label} ({index} completed)", paths.log, base_url),
            watch.sampled() as sampler,
        ):
            record = _measured_run(engine, base_url, prompts, index, benchmark)
        tolerance = float(benchmark.get("rate_tolerance_pct", DEFAULT_TOLERANCE_PCT))
        record = replace(
            record, excluded=exclusion_reason(record, tolerance), telemetry=telemetry.sampled_record(sampler)
        )
        _warn_of_telemetry(name, label, record.telemetry, progress)
        _write_evidence(paths, run_path, record.to_json())
        rates.append(record.decode_tokens_per_s)
        elapsed = time.monotonic() - runs_started
        windows = load_windows_left(benchmark, elapsed / len(rates))  # measured after the runs, at this pace
        pace = eta(len(rates), declared, elapsed, windows) if index < declared else ""
        print(
            f"{name}: {label}: {SINGLE_REQUEST_DECODE.quote(record.decode_tokens_per_s)} "
            f"(TTFT {1000 * record.client.ttft_s:.0f} ms){'; ' + pace if pace else ''}",
            file=progress,
            flush=True,
        )
        if record.excluded:
            print(
                f"{name}: WARNING: {label} is excluded from the statistics (kept in {run_path}): {record.excluded}",
                file=progress,
                flush=True,
            )
        if record.speculation_refused:
            print(f"{name}: WARNING: {label}: {record.speculation_refused}; not used", file=progress, flush=True)
        if record.counters_quantised and not any("quantised" in w for w in launch.warnings):
            launch.warnings.append(
                f"/metrics prints {', '.join(record.counters_quantised)} past 10^6 with 6 significant "
                f"digits: per-run differences are quantised, so they are not used (the response's own "
                f"counts are; verify steps stay unknown)"
            )
            print(f"{name}: WARNING: {launch.warnings[-1]}", file=progress, flush=True)
        if process.poll() is not None:
            raise ServerError(f"the server exited with status {process.returncode} during the runs")
    print(f"{name}: {launch.repetitions['stopped_because']}", file=progress, flush=True)


def _warn_of_telemetry(name: str, label: str, sampled: dict[str, Any] | None, progress: TextIO) -> None:
    """Contention and clock slowdowns during a measurement, said as they happen (docs/energy.md)."""
    if reason := telemetry.contended((sampled or {}).get("contention")):
        print(f"{name}: WARNING: {label} was measured under contention: {reason}", file=progress, flush=True)
    if slowed := telemetry.slowdowns(sampled):
        print(f"{name}: WARNING: GPU clocks slowed down during {label}: {', '.join(slowed)}", file=progress, flush=True)


def _record_stopped(
    session: Session, launch: Launch, argv: list[str], env: dict[str, str], hidden: list[str], progress: TextIO
) -> None:
    """After the stop: the log redacted and the final launch record written, without hiding the first error."""
    paths = session.paths
    try:
        # the log first: redaction moves the recorded segment starts, which launch.json then holds
        # (the shadow link is the unredacted original once the log is rewritten: redacted too)
        log = paths.own(paths.log)  # an orphaned session: its log as kept, never the next attempt's
        in_log, shifted_by_log = secret_values(env) + secret_arg_values(argv), log.exists()
        _redact_log(log, in_log, launch.log_segments or [], hidden)
        _redact_log(_shadow_of(paths, paths.log), in_log, [] if shifted_by_log else launch.log_segments or [], hidden)
        _write_evidence(paths, paths.launch, launch.to_json())
    except OSError as problem:  # e.g. a full disk: while a failure propagates, it must stay the error raised
        if launch.completed:
            raise
        print(
            f"{session.configuration.name}: WARNING: could not record the failure in {paths.launch} ({problem})",
            file=progress,
        )


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


def _generate(engine: Engine, base_url: str, prompt: str, max_tokens: int, benchmark: dict[str, Any]):
    path, payload = engine.generation(
        GenerationRequest(
            prompt=prompt,
            max_tokens=max_tokens,
            temperature=benchmark["temperature"],
            ignore_eos=benchmark["ignore_eos"],
            seed=benchmark["seed"],
        )
    )
    timeouts = float(benchmark["request_timeout_s"]), engine.auth_headers(), benchmark.get("run_timeout_s")
    return stream_post(base_url, path, payload, *timeouts)


def _measured_run(engine: Engine, base_url: str, prompts: list[Prompt], index: int, benchmark: dict[str, Any]) -> Run:
    prompt = prompts[index % len(prompts)]
    max_tokens = prompt.tokens_wanted(benchmark["max_tokens"])
    engine.flush_cache(base_url)
    before = engine.scrape_counters(base_url)
    started_at = now_iso()
    response = _generate(engine, base_url, prompt.text, max_tokens, benchmark)
    after = engine.scrape_counters(base_url)
    delta = {k: after[k] - before.get(k, 0.0) for k in after}
    # Deltas of counters printed with 6 significant digits are quantised: kept on record, never used.
    quantised = sorted(engine.quantised & set(delta))
    usable = {k: v for k, v in delta.items() if k not in quantised}
    fields, tokens, per_event = _checked_response(engine, response, max_tokens, f"run {index}")
    streamed = sum(per_event)
    arrivals = [t for n, t in zip(per_event, response.arrivals_s, strict=True) if n]
    timings = timings_from_arrivals(arrivals, tokens, response.total_s)
    text = engine.response_text(response.events)
    spec, refused = usable_speculation(engine.speculation(fields, usable, tokens))
    return Run(
        run=index,
        prompt_index=index % len(prompts),
        category=prompt.category,
        started_at=started_at,
        tokens=tokens,
        streamed_tokens=streamed,
        client=timings,
        engine=fields,
        counter_delta=delta,
        counters_quantised=quantised,
        speculation=spec,
        speculation_refused=refused,
        text_sha256=sha256_bytes(text),
        text_chars=len(text),
        malformed_events=response.malformed,
        arrivals_us=encode_arrivals(arrivals),
        exact_events=engine.exact_events,
    )


def _checked_response(
    engine: Engine, response: StreamedResponse, max_tokens: int, label: str
) -> tuple[dict[str, Any], int, list[int]]:
    """The engine's own report of a finished request, its token count and tokens per event; raise
    when the stream ended without the report or generated a different number of tokens."""
    fields = engine.engine_fields(response.events)
    tokens = engine.tokens_generated(fields)
    per_event = engine.tokens_per_event(response.events)
    if tokens is None:
        raise RunError(
            f"{label}: the stream ended after {len(response.events)} events without the engine's "
            f"final report (the server closed the connection early?)"
        )
    if tokens != max_tokens:
        raise RunError(
            f"{label}: the engine generated {tokens} tokens, not the {max_tokens} asked for (benchmark.max_tokens "
            f"or the prompt's max_tokens; streamed {sum(per_event)}); is ignore_eos honoured and the context (per "
            f"slot) large enough?"
        )
    return fields, tokens, per_event


def _measure_load(
    session: Session,
    prompts: list[Prompt],
    base_url: str,
    launch: Launch,
    process: subprocess.Popen[bytes],
    progress: TextIO,
) -> None:
    """Every load level's windows, after the single-request runs, on the same server."""
    levels = levels_of(session.benchmark)
    if not levels:
        return
    name, paths = session.configuration.name, session.paths
    slots = count_or_none((launch.engine or {}).get("total_slots"))
    wanted = max((level.in_flight or 0 for level in levels), default=0)
    if slots is not None and slots < wanted:  # llama.cpp -np unset: the server chose its slots itself
        raise RunError(
            f"the server has {slots} slot(s) (/props total_slots) but benchmark.load.concurrency asks for "
            f"{wanted}; set -np {wanted} (or more) in the configuration's args"
        )
    watch = telemetry.watch(session.benchmark, session.configuration.env)
    for level in levels:
        measured = [path for path in paths.windows[level.label] if not results.is_warmup_window(path)]
        for path in sorted(paths.windows[level.label], key=lambda p: p in measured):  # the warmup window first
            paths.check_claim()
            warmup = path not in measured
            # the warmup window sends window 0's prompts on its schedule, and is kept but in no table
            window = 0 if warmup else measured.index(path)
            label = f"load {level.label} {'warmup window' if warmup else f'window {window + 1}/{len(measured)}'}"
            phase, index = (WARMUP, None) if warmup else (LOAD, window)  # the warmup window's log rows count nowhere
            launch.log_segments.append(segment(phase, index, _log_position(process, paths.log), level.label))
            requests = int(session.benchmark["load"]["requests_per_window"])
            with (
                _server_death_named(process, label, paths.log, base_url),
                watch.sampled() as sampler,
                Ongoing(f"{name}: {label}", progress, total=requests) as ongoing,  # a window may last minutes
            ):
                record = _measured_window(session, prompts, base_url, level, window, ongoing.advance, warmup)
            record = replace(record, telemetry=telemetry.sampled_record(sampler))
            _warn_of_telemetry(name, label, record.telemetry, progress)
            _write_evidence(paths, path, record.to_json())
            start, end = record.steady
            flagged = [r.flagged for r in record.requests if r.flagged]
            print(
                f"{name}: {label}: {END_TO_END_OUTPUT.quote(record.output_tokens_per_s)}, "
                f"{len(record.requests)} requests in {record.duration_s:.1f} s, steady {start:.1f}-{end:.1f} s"
                + ("" if end > start else " (empty: more requests_per_window would give one)")
                + (f"; WARNING: {len(flagged)} request(s) counted nowhere: {flagged[0]}" if flagged else ""),
                file=progress,
                flush=True,
            )
            if process.poll() is not None:
                raise ServerError(f"the server exited with status {process.returncode} during {label}")


def _search_rate(
    session: Session,
    prompts: list[Prompt],
    base_url: str,
    launch: Launch,
    process: subprocess.Popen[bytes],
    progress: TextIO,
) -> None:
    """The SLO rate search (benchmark.load.rate_search), after the load levels, on the same server: each
    probe one window at its rate (window 0's prompts and schedule), after a warmup window as a level's."""
    spec, paths, name = rate_search_of(session.benchmark), session.paths, session.configuration.name
    if spec is None or paths.rate_search is None:
        return
    objectives = objectives_of(session.benchmark["load"].get("slo") or {})

    def probe(rate: float) -> RateProbe:
        level = LoadLevel(REQUEST_RATE, rate)
        for warmup in [True] * warmup_windows(session.benchmark) + [False]:
            paths.check_claim()
            label = f"rate search {level.label}{' warmup window' if warmup else ''}"
            # the engine's log rows of a probe count in no table, as a warmup window's
            launch.log_segments.append(segment(WARMUP, None, _log_position(process, paths.log), level.label))
            requests = int(session.benchmark["load"]["requests_per_window"])
            with (
                _server_death_named(process, label, paths.log, base_url),
                Ongoing(f"{name}: {label}", progress, total=requests) as ongoing,
            ):
                window = _measured_window(session, prompts, base_url, level, 0, ongoing.advance, warmup)
        judged = judge(window, rate, objectives)
        print(f"{name}: {label}: {judged.verdict} ({judged.why})", file=progress, flush=True)
        return judged

    record = search(spec, probe, arrivals_of(session.benchmark))
    _write_evidence(paths, paths.rate_search, record.to_json())
    found = f"{record.found_rate:g} requests/s" if record.found_rate is not None else f"none (below {spec.low:g})"
    print(f"{name}: SLO rate {found}, to {spec.resolution:g} requests/s", file=progress, flush=True)


def _measured_window(
    session: Session,
    prompts: list[Prompt],
    base_url: str,
    level: LoadLevel,
    window: int,
    ended: Callable[[], None],
    warmup: bool = False,
) -> Window:
    """One window of requests at ``level``. Request i of window w uses prompt (w * requests + i) mod n:
    the same prompts, in the same order, for every configuration. ``ended()`` is called as each request ends."""
    engine, benchmark = session.engine, session.benchmark
    load = benchmark["load"]
    requests = int(load["requests_per_window"])

    def send(index: int) -> WindowRequest:
        prompt_index = (window * requests + index) % len(prompts)
        prompt = prompts[prompt_index]
        max_tokens = prompt.tokens_wanted(benchmark["max_tokens"])
        response = _generate(engine, base_url, prompt.text, max_tokens, benchmark)
        fields, tokens, per_event = _checked_response(
            engine, response, max_tokens, f"{level.label} window {window} request {index}"
        )
        arrivals = [t for n, t in zip(per_event, response.arrivals_s, strict=True) if n]
        # per request: the response's own counts only; impossible ones are not kept (the window's counter
        # deltas, refused the same way by the load tables, still count the request's drafts)
        spec, _impossible = usable_speculation(engine.speculation(fields, {}, tokens))
        ended()
        return WindowRequest(
            index=index,
            sent_s=0.0,  # set by the window, which knows when it sent the request
            prompt_index=prompt_index,
            category=prompt.category,
            tokens=tokens,
            e2e_s=response.total_s,
            arrivals_us=encode_arrivals(arrivals),
            event_tokens=[n for n in per_event if n],
            prompt_tokens=engine.prompt_tokens(fields),
            text_sha256=sha256_bytes(engine.response_text(response.events)),
            engine_decode_tok_s=(fields.get("timings") or {}).get("predicted_per_second"),
            drafted=spec.drafted if spec else None,
            accepted=spec.accepted if spec else None,
            malformed_events=response.malformed,
            exact_events=engine.exact_events,
        )

    engine.flush_cache(base_url)
    before = engine.scrape_counters(base_url)
    started_at = now_iso()
    arrivals = arrivals_of(benchmark)
    sent, duration = run_window(level, requests, send, window_seed(int(load["seed"]), window), arrivals)
    after = engine.scrape_counters(base_url)
    recorded = [replace(s.result, sent_s=s.sent_s) for s in sent]
    # each request's end as its record says (its last token), not when its thread got back: the record
    # alone then gives the interval, and a loaded client's lag does not move it
    steady_start, steady_end = steady_interval(level, [r.sent_s for r in recorded], [r.ended_s for r in recorded])
    return Window(
        level=level.as_dict(),
        window=-1 if warmup else window,
        started_at=started_at,
        duration_s=duration,
        requests=recorded,
        # window totals: per request they cannot be told apart while requests overlap
        counter_delta={k: after[k] - before.get(k, 0.0) for k in after},
        steady_start_s=steady_start,
        steady_end_s=steady_end,
        warmup=warmup,
        arrivals=arrivals.as_dict() if level.kind != CONCURRENCY else None,
    )


def _hide(written: Any, values: list[str]) -> Any:
    """An environment (mapping) or argv (list) with every element equal to one of ``values`` redacted: the API
    key and from_env secrets, whatever the name of the variable or flag that carries them."""
    secret = {v for v in values if v}
    if isinstance(written, dict):
        return {k: REDACTED if v in secret else v for k, v in written.items()}
    return [REDACTED if v in secret else v for v in written]


LOG_QUIET_S = 0.05  # the log unchanged this long: the previous request's late lines are written
LOG_SETTLE_MAX_S = 1.0  # an engine that logs all the time (periodic stats) is not waited for longer


def _log_position(process: Any, log: Path) -> int:
    """Where in the session's server.log the next request's lines will start. An attached endpoint's
    log is copied into server.log only at the end, from where it stood at attach (``log_start``)."""
    source = getattr(process, "log_source", None)
    return _log_size(log) if source is None else max(0, _log_size(source) - process.log_start)


def _log_size(log: Path) -> int:
    """Where the lines of the next request will start: the server log's size once it has been quiet for
    LOG_QUIET_S (engines log from their own threads, so a request's last lines may trail its response).
    Called between requests only, never while a run is timed."""
    size = _size(log)
    quiet_since = started = time.monotonic()
    while time.monotonic() - quiet_since < LOG_QUIET_S and time.monotonic() - started < LOG_SETTLE_MAX_S:
        time.sleep(LOG_QUIET_S / 5)
        if (now := _size(log)) != size:
            size, quiet_since = now, time.monotonic()
    return size


def _size(log: Path) -> int:
    try:
        return log.stat().st_size
    except FileNotFoundError:  # an external endpoint without a readable log
        return 0


def _redact_log(log: Path, secrets: list[str], segments: list[dict[str, Any]], declared: list[str]) -> None:
    """Replace secret values in the log (as bytes: nothing else changes), and move the recorded segment
    starts by what the replacements before them added or removed."""
    if (secrets or any(declared)) and log.exists():
        raw = log.read_bytes()
        redacted = redact_values(raw, secrets, declared)
        if redacted != raw:
            for entry in segments:
                entry["start"] = len(redact_values(raw[: entry["start"]], secrets, declared))
            atomic_write(log, redacted)


def _shadow_of(paths: SessionPaths, path: Path) -> Path:
    return paths.shadow / path.relative_to(paths.failed_root.parent)


def _link_log(paths: SessionPaths) -> None:
    """A hard link to the server log, which the server appends to: the link sees everything."""
    link = _shadow_of(paths, paths.log)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    # already deleted, or a filesystem without hard links: then only the output itself can be kept
    with contextlib.suppress(OSError):
        os.link(paths.log, link)


def _write_evidence(paths: SessionPaths, path: Path, record: dict[str, Any]) -> None:
    """Write an output record, and first the same record into ``paths.shadow`` (from memory: the output
    may be deleted at any time); an orphaned session writes it only where its evidence was moved."""
    if (own := paths.own(path)) != path:
        write_json(own, record)
        return
    shadow = _shadow_of(paths, path)
    shadow.parent.mkdir(parents=True, exist_ok=True)
    write_json(shadow, record)
    write_json(path, record)


def _keep_for_post_mortem(paths: SessionPaths, error: BaseException, reserve: ErrorReserve) -> Path:
    """Link the session's files into ``failed/<timestamp>/`` (Snakemake deletes the originals next), and the
    traceback into its error.txt first; neither needs free space (a hard link, the reserved error file).
    The folder is named after the attempt (its Slurm job); an orphaned session adds to the folder its
    evidence was moved to, from its own shadow only (the outputs are the next attempt's)."""
    orphaned = paths.claim.kept_in() if paths.claim else None
    kept = orphaned or paths.failed_root / f"{now_stamp()}-{claims.attempt_key()}"
    kept.mkdir(parents=True, exist_ok=True)
    if orphaned:
        with open(kept / "error.txt", "a") as note:
            note.write("\nThe orphaned session itself, when it noticed:\n" + "".join(traceback.format_exception(error)))
    else:
        reserve.write(kept / "error.txt", "".join(traceback.format_exception(error)))
    problems = []
    for path in _evidence(paths):
        target = kept / path.relative_to(paths.failed_root.parent)
        # the shadow first: Snakemake may delete the output at any moment, even mid-copy
        candidates = (_shadow_of(paths, path),) if orphaned else (_shadow_of(paths, path), path)
        sources = [s for s in candidates if s.exists()]
        for source in sources:
            try:
                if orphaned:  # its shadow copy replaces what the takeover kept, unless written there since
                    if target.exists() and target.stat().st_mtime >= source.stat().st_mtime:
                        break
                    target.unlink(missing_ok=True)
                keep_copy(source, target)
                break
            except OSError as problem:
                if source is sources[-1]:
                    problems.append(f"{path}: {problem}")
    if problems:
        raise OSError(f"kept in {kept} except {'; '.join(problems)}")
    return kept


def _evidence(paths: SessionPaths) -> list[Path]:
    """Every file of a session that failed/ keeps: the server log, launch record, runs, load windows."""
    search = [paths.rate_search] if paths.rate_search else []
    return [paths.log, paths.launch, *with_extra_runs(paths.runs), *paths.all_windows(), *search]
