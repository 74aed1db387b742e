"""The expected wall time of a sweep, before any launch (rule ``plan``, and ``all``'s ``onstart``).

Per session (configuration-instance, ``design``) the seconds of each phase of measure/session.py: launch
until ready, warmup requests, the single-request runs (runs x (TTFT + max_tokens / decode rate)), each
load level's warmup window and measured windows, the rate search's probes, teardown. Each phase comes from the first of:

1. the records of an earlier session of the same instance in the results tree (``results/<name>/``);
2. those of the configuration's other sessions (``<name>-s<k>``, ``<baseline>-end``), their median;
3. the median of the earlier sessions of the same engine kind (any name under ``results/``);
4. the kind's stated assumption (``ASSUMED``, each figure with where it comes from).

Measured figures are per unit (a run's TTFT and decode rate, a window's seconds per output token), so a
changed ``runs``, ``max_tokens`` or ``requests_per_window`` rescales them. Not in it: Snakemake's own start
of each job (1-2 s here), adaptive runs beyond ``benchmark.runs`` (said where configured), and the jobs
after measuring (tables, figures: seconds of CPU).
"""

from __future__ import annotations

import glob
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specsweep.plan.config import Configuration
from specsweep.plan.load_levels import CONCURRENCY, RAMP_UP, REQUEST_RATE, LoadLevel, levels_of, warmup_windows
from specsweep.plan.rate_search import rate_search_of
from specsweep.record import results
from specsweep.record.clock import epoch_seconds


@dataclass(frozen=True)
class Assumption:
    """What a session of an engine kind takes where nothing was measured, and where the figures come from."""

    ready_s: float
    ttft_s: float
    decode_tokens_per_s: float
    teardown_s: float
    source: str


# Throughput at concurrency C as C**LOAD_SCALING times one request's: the h200-load example's baseline
# (llama.cpp, SmolLM2-135M on an H200) went from 665 to 1946 output tok/s from concurrency 1 to 64.
LOAD_SCALING = 0.26
_VLLM_H200 = "vLLM 0.25 on an H200 (measured 2026-12-01/02): ready in 35-117 s (first launch compiles)"
ASSUMED: dict[str, Assumption] = {
    "llamacpp": Assumption(
        5.0,
        0.05,
        90.0,
        1.0,
        "llama.cpp: ready in a few seconds (0.7-0.9 s on the H200 of docs/examples/h200-load), 90 tok/s "
        "(SmolLM2-135M on 1 CPU thread, docs/performance.md; 670 on that H200), teardown 0.3 s there",
    ),
    "vllm": Assumption(
        117.0,
        0.05,
        470.0,
        10.0,
        f"{_VLLM_H200}, 470 tok/s (a c1 window of 256 x 256 tokens took ~140 s); TTFT, teardown guessed",
    ),
    "sglang": Assumption(
        140.0,
        0.05,
        470.0,
        10.0,
        "SGLang 0.5.16 on an H200 (measured 2026-12-02): ready in 139 s; decode rate as vLLM's on "
        "that node; TTFT, teardown guessed",
    ),
    "external": Assumption(0.0, 0.05, 470.0, 0.0, "external endpoint: nothing launched or stopped; as vLLM's rate"),
}
UNKNOWN_KIND = ASSUMED["vllm"]  # an engine kind with no figures of its own: the slowest launch known

# The table's columns: the phases of a session, in the order it runs them.
LAUNCH, WARMUP, RUNS, WARMUP_WINDOWS, WINDOWS, TEARDOWN = (
    "launch",
    "warmup",
    "runs",
    "load warmup",
    "load windows",
    "teardown",
)
COLUMNS = (LAUNCH, WARMUP, RUNS, WARMUP_WINDOWS, WINDOWS, TEARDOWN)
MEASURED, ASSUMED_SOURCE = "measured", "assumed"


@dataclass(frozen=True)
class Measured:
    """One earlier session's timings, read from its records; None where the records do not say."""

    session: str
    kind: str
    ready_s: float | None = None  # launch until ready
    warmup_s: float | None = None  # ready until the first run: post-start checks and warmup requests
    ttft_s: float | None = None  # mean over its runs
    decode_tokens_per_s: float | None = None  # median over its runs
    teardown_s: float | None = None  # last token measured until the server had stopped
    # level label -> seconds per output token of its measured windows (mean), and of its warmup window
    window_s_per_token: dict[str, float] = field(default_factory=dict)
    warmup_window_s_per_token: dict[str, float] = field(default_factory=dict)


def measured_session(name: str, root: str | Path = results.ROOT) -> Measured | None:
    """The timings of ``results/<name>/`` (None without a launch record), through results' own readers."""
    launch_path = Path(results.launch_file(name, root))
    if not launch_path.exists():
        return None
    launch = results.read_launch(launch_path)
    runs = results.load_runs(sorted(glob.glob(results.run_file(glob.escape(name), "*", root)))).get(name, [])
    windows = results.load_windows(glob.glob(results.window_file(glob.escape(name), "*", "*", root))).get(name, [])
    launched = epoch_seconds(launch.launched_at)
    timed = [(epoch_seconds(r.started_at), r.client) for r in runs if r.started_at]  # older records: no time
    ends = [s + c.e2e_s for s, c in timed if math.isfinite(c.e2e_s)] + [
        epoch_seconds(w.started_at) + w.duration_s for w in windows if w.started_at
    ]
    warmup_s = min(s for s, _ in timed) - launched - launch.ready_s if timed and launch.ready_s is not None else None
    ttfts = [r.client.ttft_s for r in runs if math.isfinite(r.client.ttft_s)]
    rates = [r.client.decode_tokens_per_s for r in runs if r.client.decode_tokens_per_s > 0]  # NaN is not > 0
    stopped = launch.completed and launch.stopped_at and ends  # a failed session's stop says nothing of teardown
    teardown_s = epoch_seconds(launch.stopped_at) - max(ends) if stopped else None
    return Measured(
        session=name,
        kind=launch.configuration.get("kind", ""),
        ready_s=launch.ready_s,
        warmup_s=warmup_s,
        ttft_s=statistics.fmean(ttfts) if ttfts else None,
        decode_tokens_per_s=statistics.median(rates) if rates else None,
        teardown_s=teardown_s,
        window_s_per_token=_per_token([w for w in windows if not w.warmup]),
        warmup_window_s_per_token=_per_token([w for w in windows if w.warmup]),
    )


def _per_token(windows: Iterable[results.Window]) -> dict[str, float]:
    by_label: dict[str, list[float]] = {}
    for window in windows:
        tokens = sum(r.tokens for r in window.requests)
        if tokens:
            by_label.setdefault(window.label, []).append(window.duration_s / tokens)
    return {label: statistics.fmean(values) for label, values in by_label.items()}


def measured_sessions(root: str | Path = results.ROOT) -> dict[str, Measured]:
    """Every session the results tree holds a launch record of (an earlier sweep's names too). A damaged
    record leaves its session out: the plan says nothing of it, the summary job names it."""
    found = {}
    for path in sorted(glob.glob(results.launch_file("*", root))):
        name = results.configuration_of_file(path)
        try:
            timings = measured_session(name, root)
        except ValueError:  # DamagedFile, a window that is not one
            continue
        if timings is not None:
            found[name] = timings
    return found


@dataclass(frozen=True)
class Phase:
    column: str  # one of COLUMNS
    name: str  # what it is, e.g. "c4 windows (3)"
    seconds: float
    source: str  # "measured: ..." or "assumed: ..."

    @property
    def measured(self) -> bool:
        return self.source.startswith(MEASURED)


@dataclass(frozen=True)
class SessionEstimate:
    session: str
    kind: str
    phases: tuple[Phase, ...]

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.phases)

    def column(self, name: str) -> float:
        return sum(p.seconds for p in self.phases if p.column == name)


# A tier of sources: its label and the sessions it takes the median of.
_Tier = tuple[str, list[Measured]]


def estimate(
    configurations: Mapping[str, Configuration], benchmark: dict[str, Any], measured: Mapping[str, Measured]
) -> list[SessionEstimate]:
    """Every session of the sweep (``configurations``: what ``design.configurations_of`` gives), in the
    given order, from ``measured`` (``measured_sessions``) where it can."""
    return [
        _session_estimate(configuration, benchmark, _tiers(name, configurations, measured))
        for name, configuration in configurations.items()
    ]


def _tiers(name: str, configurations: Mapping[str, Configuration], measured: Mapping[str, Measured]) -> list[_Tier]:
    configuration = configurations[name]
    own = configuration.session_of or name
    siblings = [
        m
        for other, m in measured.items()
        if other != name and other in configurations and (configurations[other].session_of or other) == own
    ]
    same_kind = [m for m in measured.values() if m.kind == configuration.kind]
    return [
        (f"{MEASURED}: {name}", [measured[name]] if name in measured else []),
        (f"{MEASURED}: other sessions of {own}", siblings),
        (f"{MEASURED}: median of {{n}} {configuration.kind} session(s)", same_kind),
    ]


def _first(tiers: Sequence[_Tier], value: Callable[[Measured], float | None]) -> tuple[float, str] | None:
    """The median of ``value`` over the first tier whose sessions have it, and that tier's label."""
    for label, sessions in tiers:
        values = [v for m in sessions if (v := value(m)) is not None]
        if values:
            return statistics.median(values), label.format(n=len(values))
    return None


def _session_estimate(configuration: Configuration, benchmark: dict[str, Any], tiers: list[_Tier]) -> SessionEstimate:
    assumed = ASSUMED.get(configuration.kind, UNKNOWN_KIND)
    why = f"{ASSUMED_SOURCE} ({configuration.kind})"

    def pick(value: Callable[[Measured], float | None], fallback: float) -> tuple[float, str]:
        return _first(tiers, value) or (fallback, why)

    runs, max_tokens = int(benchmark["runs"]), int(benchmark["max_tokens"])
    ttft, ttft_source = pick(lambda m: m.ttft_s, assumed.ttft_s)
    rate, rate_source = pick(lambda m: m.decode_tokens_per_s, assumed.decode_tokens_per_s)
    request_s = ttft + max_tokens / rate  # one request alone
    warmup_requests = int(benchmark.get("warmup_requests", 0))
    warmup_assumed = warmup_requests * (ttft + int(benchmark.get("warmup_max_tokens", max_tokens)) / rate)
    adaptive = benchmark.get("adaptive")
    phases = [
        Phase(LAUNCH, "launch until ready", *pick(lambda m: m.ready_s, assumed.ready_s)),
        Phase(WARMUP, f"{warmup_requests} warmup request(s)", *pick(lambda m: m.warmup_s, warmup_assumed)),
        Phase(
            RUNS,
            f"{runs} runs" + (f" (adaptive: up to {adaptive['max_runs']})" if adaptive else ""),
            runs * request_s,
            ttft_source if ttft_source == rate_source else f"TTFT {ttft_source}; decode rate {rate_source}",
        ),
    ]
    for level in levels_of(benchmark):
        phases += _level_phases(level, benchmark, tiers, request_s)
    phases += _search_phases(benchmark, request_s)
    phases.append(Phase(TEARDOWN, "teardown", *pick(lambda m: m.teardown_s, assumed.teardown_s)))
    return SessionEstimate(configuration.name, configuration.kind, tuple(phases))


def _level_phases(level: LoadLevel, benchmark: dict[str, Any], tiers: list[_Tier], request_s: float) -> list[Phase]:
    """A load level's warmup window (``benchmark.load.warmup``) and its measured windows."""
    load, label = benchmark["load"], level.label
    requests, windows = int(load["requests_per_window"]), int(load["windows"])
    tokens = requests * int(benchmark["max_tokens"])
    measured = _first(tiers, lambda m: m.window_s_per_token.get(label))
    window_s, source = (measured[0] * tokens, measured[1]) if measured else _assumed_window(level, requests, request_s)
    phases = [Phase(WINDOWS, f"{label} windows ({windows})", windows * window_s, source)]
    if warmup_windows(benchmark):
        warm = _first(tiers, lambda m: m.warmup_window_s_per_token.get(label))
        warm_s, warm_source = (warm[0] * tokens, warm[1]) if warm else (window_s, f"{source} (as a measured window)")
        phases.insert(0, Phase(WARMUP_WINDOWS, f"{label} warmup window", warm_s, warm_source))
    return phases


def _search_phases(benchmark: dict[str, Any], request_s: float) -> list[Phase]:
    """The rate search's probes (``benchmark.load.rate_search``), each after a warmup window where levels have
    one: at most 1 + steps open-loop windows, each assumed at ``low`` (the longest schedule) since the
    rates probed depend on what passes."""
    search = rate_search_of(benchmark)
    if search is None:
        return []
    level = LoadLevel(REQUEST_RATE, search.low)
    window_s, source = _assumed_window(level, int(benchmark["load"]["requests_per_window"]), request_s)
    source = f"{source}, each probe at low"
    phases = [Phase(WINDOWS, f"rate search probes (at most {search.probes})", search.probes * window_s, source)]
    if warmup_windows(benchmark):
        phases.insert(0, Phase(WARMUP_WINDOWS, "rate search warmup windows", search.probes * window_s, source))
    return phases


def load_windows_left(benchmark: dict[str, Any], request_s: float) -> tuple[int, float]:
    """The load windows a session measures after its runs (warmup windows and the rate search's probes at
    most included) and their expected seconds at the session's own pace (one request alone takes
    ``request_s``): the run ETA counts them."""
    phases = [p for level in levels_of(benchmark) for p in _level_phases(level, benchmark, [], request_s)]
    count = sum(1 if p.column == WARMUP_WINDOWS else int(benchmark["load"]["windows"]) for p in phases)
    search, probes = _search_phases(benchmark, request_s), rate_search_of(benchmark)
    count += len(search) * probes.probes if probes else 0
    return count, sum(p.seconds for p in phases + search)


def _assumed_window(level: LoadLevel, requests: int, request_s: float) -> tuple[float, str]:
    """A window nothing was measured for: closed loop, requests / C x one request's time at C (throughput
    C**LOAD_SCALING that of one request); open loop, the schedule (requests / rate) and its last request."""
    if level.kind == CONCURRENCY:
        return requests * request_s / level.value**LOAD_SCALING, f"{ASSUMED_SOURCE}: throughput x C^{LOAD_SCALING}"
    if level.kind == RAMP_UP:  # the mean gaps along the ramp
        return sum(1 / r for r in level.rates(requests)[1:]) + request_s, f"{ASSUMED_SOURCE}: the ramp + one request"
    return requests / level.value + request_s, f"{ASSUMED_SOURCE}: requests / rate + one request"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f}"


def _source_summary(estimate: SessionEstimate) -> str:
    """``measured`` or ``assumed`` when every phase is; else which columns are which."""
    kinds: dict[str, list[str]] = {}
    for phase in estimate.phases:
        columns = kinds.setdefault(MEASURED if phase.measured else ASSUMED_SOURCE, [])
        if phase.column not in columns:
            columns.append(phase.column)
    if len(kinds) == 1:
        return next(iter(kinds))
    return "; ".join(f"{kind}: {', '.join(columns)}" for kind, columns in kinds.items())


def table(estimates: Sequence[SessionEstimate]) -> list[str]:
    """Per session and in all, in minutes: what the console shows and commands.sh keeps."""
    width = max([len(e.session) for e in estimates] + [len("session")])
    kind_width = max([len(e.kind) for e in estimates] + [len("kind")])
    header = [f"{'session':<{width}}", f"{'kind':<{kind_width}}", *COLUMNS, "  total", " source"]
    lines = ["  ".join(header)]
    for e in estimates:
        cells = [f"{_minutes(e.column(c)):>{len(c)}}" for c in COLUMNS] + [f"{_minutes(e.seconds):>7}"]
        lines.append("  ".join([f"{e.session:<{width}}", f"{e.kind:<{kind_width}}", *cells, f" {_source_summary(e)}"]))
    total = sum(e.seconds for e in estimates)
    lines.append(
        f"all {len(estimates)} session(s): {_minutes(total)} min ({total:.0f} s, {total / 3600:.2f} h) of measuring"
    )
    return lines


def details(estimates: Sequence[SessionEstimate]) -> list[str]:
    """Every phase of every session with its seconds and source, then the assumptions used."""
    lines = []
    for e in estimates:
        lines.append(f"{e.session} ({e.kind}): {_minutes(e.seconds)} min")
        width = max(len(p.name) for p in e.phases)
        lines.extend(f"  {p.name:<{width}} {p.seconds:9.1f} s  {p.source}" for p in e.phases)
    kinds = sorted({e.kind for e in estimates if any(not p.measured for p in e.phases)})
    lines.extend(f"{ASSUMED_SOURCE} ({kind}): {ASSUMED.get(kind, UNKNOWN_KIND).source}" for kind in kinds)
    return lines


def report(
    configurations: Mapping[str, Configuration], benchmark: dict[str, Any], root: str | Path = results.ROOT
) -> tuple[list[str], list[str]]:
    """The table and the details of ``configurations``' sessions, from the results tree at ``root``."""
    estimates = estimate(configurations, benchmark, measured_sessions(root))
    heading = "Expected wall time in minutes (measured from earlier sessions in results/ where they exist):"
    return [heading, *table(estimates)], details(estimates)
