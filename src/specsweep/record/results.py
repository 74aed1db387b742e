"""The results tree and the records in it: one home for every path under ``results/`` and for the
run and launch records' JSON form.

Paths are plain strings relative to the working directory (what Snakemake rules name); pass a
``{cfg}``-style placeholder to get a rule's pattern, or a name to get one file. Jobs and library code
read records as ``Run`` and ``Launch`` attributes, never by string key; ``load_runs`` is the one
loader of run records (declared runs plus any adaptive extras beside them).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from specsweep.record import tokens as token_count
from specsweep.record.atomic import DamagedFile
from specsweep.record.speculation import SpeculationCounts, usable_speculation

UNCATEGORISED = "uncategorised"  # the category of a prompt the dataset gives none


# The run, launch and window files' format, with its dated history. Each file states the format it was written
# in ("format"; absent before 4): a later specsweep reads every earlier one (fields a record lacks read as "not
# recorded") and refuses a newer one, naming the file and the fix, instead of misreading it.
RECORD_FORMAT = 5
RECORD_FORMATS = {
    1: "2026-11-30: typed run and launch records (per-run speculation counts, counters_quantised)",
    2: "2026-12-01: token arrivals per run, load windows with their steady interval, telemetry",
    3: "2026-12-02: the engine's token count checked against the stream (streamed_tokens, exact_events)",
    4: "2026-12-03: the format stated; speculation_refused; a window request's prompt_tokens",
    5: "2026-12-03: a window's arrival shape (arrivals), a ramp level's start and strategy; the rate search record",
}


class NewerRecord(RuntimeError):
    """A record written by a newer specsweep: the file is sound (never set aside as damaged), the reader old."""


def _record(path: str | Path, kind: str) -> Any:
    """A record file's JSON, refused when its format is newer than this specsweep reads."""
    data = json.loads(Path(path).read_text())
    written = data.get("format") if isinstance(data, dict) else None
    if isinstance(written, int) and written > RECORD_FORMAT:
        raise NewerRecord(
            f"{path}: a {kind} record of format {written}, written by a newer specsweep; this one reads formats up "
            f"to {RECORD_FORMAT}: update specsweep, or rebuild an archive with its own code (its code/ folder)"
        )
    return data


@dataclass(frozen=True)
class ClientTimings:
    """What the client saw. Decode rate excludes the first token, whose time is TTFT."""

    ttft_s: float
    decode_s: float
    e2e_s: float
    decode_tokens_per_s: float
    itl_median_s: float
    itl_p90_s: float
    content_events: int


ROOT = "results"

# Folders of the pipeline's own under results/ (names.reserved_names derives the names a configuration may
# not take from what the rules write, these among them).
ENGINES_DIR, MODELS_DIR, FIGURES_DIR, ARCHIVE_DIR, PAPER_DIR, COMPARE_DIR, PLAN_DIR = (
    "engine",
    "models",
    "figures",
    "archive",
    "paper",
    "compare",
    "plan",
)


def _under(*parts: str, root: str | Path = ROOT) -> str:
    return "/".join((str(root), *parts))


def _in_configuration(*parts: str) -> Callable[..., str]:
    """The path function of results/<cfg>/<parts> (``root`` replaces results/, e.g. an unpacked archive)."""

    def path(cfg: str, root: str | Path = ROOT) -> str:
        return _under(cfg, *parts, root=root)

    return path


def _record_in(folder: str) -> Callable[[str], str]:
    """The path function of results/<folder>/<name>.json."""

    def path(name: str) -> str:
        return _under(folder, f"{name}.json")

    return path


# Per configuration: results/<cfg>/...
launch_file = _in_configuration("launch.json")
server_log = _in_configuration("server.log")
runs_dir = _in_configuration("runs")
profile_file = _in_configuration("profile.csv")
configuration_provenance = _in_configuration("provenance.json")
# The process group of a running server, so a rerun can stop one that an interrupted job left behind.
stale_pgid_file = _in_configuration("server.pgid")
# failed/<timestamp>/: partial results of a failed session (Snakemake does not delete them).
failed_dir = _in_configuration("failed")
# history/<launched_at>/: previous sessions, kept before the configuration was measured again.
history_dir = _in_configuration("history")
# load/<level>/window_<w>.json: the load windows of a session (benchmark.load).
load_dir = _in_configuration("load")
# load/rate_search.json: the session's SLO rate search (benchmark.load.rate_search)
rate_search_file = _in_configuration("load", "rate_search.json")
configuration_dir = _in_configuration()
# .session/: hard links to a running session's files under names Snakemake does not know (Snakemake deletes
# a failed job's outputs); a killed session leaves them behind, and history keeps them.
SESSION_LINKS = ".session"


def run_file(cfg: str, i: int | str, root: str | Path = ROOT) -> str:
    """A declared run (a Snakemake output): results/<cfg>/runs/run_<i>.json."""
    return _under(cfg, "runs", f"run_{i}.json", root=root)


# A run file (declared or adaptive extra) and a launch file in any path that holds results/ (a folder, an
# archive member): group 1 is the configuration, group 2 the run index.
RUN_PATH = re.compile(rf"(?:^|/){ROOT}/([^/]+)/runs/(?:extra/)?run_(\d+)\.json$")
LAUNCH_PATH = re.compile(rf"(?:^|/){ROOT}/([^/]+)/launch\.json$")


def extra_runs_dir(declared_runs_dir: str | Path) -> Path:
    """Adaptive repetitions beyond the declared runs: runs/extra/ beside the declared run files."""
    return Path(declared_runs_dir) / "extra"


def extra_run_file(declared_runs_dir: str | Path, i: int) -> Path:
    return extra_runs_dir(declared_runs_dir) / f"run_{i}.json"


# Per name: a configuration's plan, an engine's and a model's record.
plan_file = _record_in(PLAN_DIR)
engine_record_file = _record_in(ENGINES_DIR)
model_record_file = _record_in(MODELS_DIR)


# Sweep-wide tables and reports.
SUMMARY = _under("summary.csv")
RUNS_TABLE = _under("runs.csv")
DRIFT = _under("drift.csv")
CONFIRMATION_CHOICE = _under("confirmation.json")  # what the sweep chose, to confirm (analyse/confirm.py)
CONFIRMATION = _under("confirmation.csv")  # its speedup from fresh sessions alone


def sequential_round(r: int | str) -> str:
    """Who gets session r + 1 of a sequential design, decided on sessions 1..r (analyse/sequential.py)."""
    return _under(f"sequential_round_{r}.json")


EFFECTS = _under("effects.csv")  # crossed factors only (effects.py)
COSTMODEL = _under("costmodel.csv")
COSTMODEL_PARAMETERS = _under("costmodel_parameters.csv")
COSTMODEL_REPORT = _under("costmodel.md")
PROVENANCE = _under("provenance.json")
COMMANDS = _under("commands.sh")
# Written by a command, not a rule (`snakemake --report results/report.html`, which the conclusion suggests):
# reserved all the same (names.reserved_names).
REPORT = _under("report.html")
PAPER_MACROS = _under(PAPER_DIR, "macros.tex")
PAPER_TABLE = _under(PAPER_DIR, "summary_table.tex")
COMPARISON_TABLE = _under(COMPARE_DIR, "comparison.csv")
REBUILD_CHECK = _under(ARCHIVE_DIR, "rebuild-check.txt")


# Every figure is written in each of these: PNG for the report, SVG for the web, PDF for a paper.
FIGURE_FORMATS = ("png", "svg", "pdf")


def figure(name: str, fmt: str = "png") -> str:
    return _under(FIGURES_DIR, f"{name}.{fmt}")


def comparison_figure(fmt: str = "png") -> str:
    return _under(COMPARE_DIR, f"comparison.{fmt}")


def archive_file(name: str) -> str:
    return _under(ARCHIVE_DIR, f"{name}.tar.gz")


def archive_verified(name: str) -> str:
    return _under(ARCHIVE_DIR, f"{name}.verified.txt")


def archive_rebuilt(name: str) -> str:
    """The certificate that the archive rebuilt itself in an empty folder (the archive target needs it)."""
    return _under(ARCHIVE_DIR, f"{name}.rebuilt.txt")


def configuration_of(run_path: str | Path) -> str:
    """results/<cfg>/runs/run_<i>.json or results/<cfg>/runs/extra/run_<i>.json -> <cfg>."""
    path = Path(run_path)
    declared = path.parent.parent if path.parent.name == "extra" else path.parent
    return declared.parent.name


def configuration_of_file(path: str | Path) -> str:
    """results/<cfg>/<file> (launch.json, server.log, profile.csv, ...) -> <cfg>."""
    return Path(path).parent.name


def with_extra_runs(declared: Iterable[str | Path]) -> list[Path]:
    """The declared run files plus any adaptive extras beside them, in run order."""
    paths = [Path(p) for p in declared]
    extras = {e for p in paths for e in extra_runs_dir(p.parent).glob("run_*.json")}
    return paths + sorted(extras, key=lambda e: (configuration_of(e), int(e.stem.split("_")[1])))


@dataclass(frozen=True)
class Run:
    """One measured generation (results/<cfg>/runs/run_<i>.json).

    Fields a record from an older specsweep lacks read as "not recorded" (None, NaN, empty).
    """

    run: int
    prompt_index: int
    tokens: int
    client: ClientTimings
    engine: dict[str, Any]  # the engine's own fields of the final event (llama.cpp timings, usage)
    speculation: SpeculationCounts | None
    text_sha256: str
    started_at: str = ""
    streamed_tokens: int | None = None
    counter_delta: dict[str, float] = field(default_factory=dict)
    # Counters printed with 6 significant digits past 10^6 (engines.base.quantised_counters): in counter_delta,
    # but not used for speculation.
    counters_quantised: list[str] = field(default_factory=list)
    text_chars: int | None = None
    malformed_events: int = 0  # data: lines of the stream that were not JSON objects
    # why the session left this run out of the statistics (rate_check: client and engine rates disagree)
    excluded: str | None = None
    category: str = UNCATEGORISED  # the prompt's category in the dataset (benchmark.prompts)
    # every token-carrying event's arrival, delta-encoded integer microseconds after sending (specsweep.analyse.latency)
    arrivals_us: list[int] = field(default_factory=list)
    # power, energy, clocks and contention sampled while the run was measured (measure/telemetry.py, docs/energy.md)
    telemetry: dict[str, Any] | None = None
    exact_events: bool = False  # each event said how many tokens it carried (record/tokens.py)
    # why the engine's speculation counts were refused (usable_speculation), speculation then None
    speculation_refused: str | None = None

    @property
    def flagged(self) -> str | None:
        """Why the engine's count disagrees with the stream (record/tokens.py); None when it agrees or the
        record has no streamed count."""
        if self.streamed_tokens is None:
            return None
        events = len(self.arrivals_us) or self.client.content_events
        return token_count.disagreement(self.tokens, self.streamed_tokens, events, self.exact_events)

    @property
    def decode_tokens_per_s(self) -> float:
        return self.client.decode_tokens_per_s

    @property
    def engine_tokens_per_s(self) -> float:
        """The engine's own decode rate (llama.cpp ``timings.predicted_per_second``), NaN if it has none."""
        return self.engine.get("timings", {}).get("predicted_per_second", math.nan)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RECORD_FORMAT,
            "run": self.run,
            "prompt_index": self.prompt_index,
            "category": self.category,
            "arrivals_us": self.arrivals_us,
            "started_at": self.started_at,
            "tokens": self.tokens,
            "streamed_tokens": self.streamed_tokens,
            "client": asdict(self.client),
            "engine": self.engine,
            "counter_delta": self.counter_delta,
            "counters_quantised": self.counters_quantised,
            "speculation": None if self.speculation is None else self.speculation.to_json(),
            "text_sha256": self.text_sha256,
            "text_chars": self.text_chars,
            "malformed_events": self.malformed_events,
            "excluded": self.excluded,
            "telemetry": self.telemetry,
            "exact_events": self.exact_events,
            "speculation_refused": self.speculation_refused,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Run:
        client = data["client"]
        timings = ClientTimings(**{f.name: client.get(f.name, math.nan) for f in fields(ClientTimings)})
        # a record written before impossible counts were refused is refused as it is read
        claimed = data.get("speculation")
        spec, refused = usable_speculation(SpeculationCounts.from_json(claimed) if claimed else None)
        return cls(
            run=data["run"],
            prompt_index=data["prompt_index"],
            tokens=data["tokens"],
            client=timings,
            engine=data.get("engine") or {},
            speculation=spec,
            text_sha256=data["text_sha256"],
            started_at=data.get("started_at", ""),
            streamed_tokens=data.get("streamed_tokens"),
            counter_delta=data.get("counter_delta") or {},
            counters_quantised=data.get("counters_quantised") or [],
            text_chars=data.get("text_chars"),
            malformed_events=data.get("malformed_events", 0),
            excluded=data.get("excluded"),
            category=data.get("category", UNCATEGORISED),
            arrivals_us=data.get("arrivals_us") or [],
            telemetry=data.get("telemetry"),
            exact_events=bool(data.get("exact_events", False)),
            speculation_refused=data.get("speculation_refused") or refused,
        )


def read_run(path: str | Path) -> Run:
    try:
        return Run.from_json(_record(path, "run"))
    except (AttributeError, KeyError, TypeError, ValueError) as error:  # JSONDecodeError is a ValueError
        raise DamagedFile(Path(path), f"not a run record: {error!r}") from None


def load_runs(declared: Iterable[str | Path]) -> dict[str, list[Run]]:
    """Run records per configuration, in run order: the declared runs and any adaptive extras beside them.
    The one loader of run records (summary, cost model, drift report, figures, partial summary)."""
    runs: dict[str, list[Run]] = {}
    for path in with_extra_runs(declared):
        runs.setdefault(configuration_of(path), []).append(read_run(path))
    return runs


# Written into launch.json only once known (absent, not null, before that).
_LATER = ("env_origin", "log_segments", "ready_s", "engine", "chat_template", "repetitions", "stopped_at", "gpu_memory")


@dataclass
class Launch:
    """One configuration's server session (results/<cfg>/launch.json), rewritten as it progresses:
    ``status`` launching -> ready -> completed, or failed."""

    configuration: dict[str, Any]  # Configuration.as_params(), secrets redacted
    argv: list[str]
    port: int
    host: str
    env_set: dict[str, str]  # what the configuration sets (redacted)
    env: dict[str, str]  # the server's whole environment (redacted)
    launched_at: str
    env_unset: list[str] = field(default_factory=list)  # what the configuration removes (null)
    # where each variable of env came from: config, pass-through, default (environment.py); None: older record
    env_origin: dict[str, str] | None = None
    # where in server.log each warmup request, run and the teardown start (segments.py); None: older record
    log_segments: list[dict[str, Any]] | None = None
    pid: int | None = None
    status: str = "launching"
    warnings: list[str] = field(default_factory=list)
    machine: dict[str, Any] | None = None  # machine.snapshot() just before the server started
    placement: dict[str, Any] | None = None  # placement.placement(): node, GPU models, driver, Slurm job
    ready_s: float | None = None
    engine: dict[str, Any] | None = None  # what the engine reported once ready (version, warning)
    chat_template: dict[str, Any] | None = None  # benchmark.chat_template: the first prompt as rendered
    repetitions: dict[str, Any] | None = None  # runs and why the session stopped
    stopped_at: str | None = None
    gpu_memory: dict[str, Any] | None = None
    benchmark: dict[str, Any] | None = None  # the benchmark settings measured under (redacted; older: absent)

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    @property
    def engine_version(self) -> str | None:
        return (self.engine or {}).get("version")

    def to_json(self) -> dict[str, Any]:
        record = {
            "format": RECORD_FORMAT,
            "configuration": self.configuration,
            "argv": self.argv,
            "port": self.port,
            "host": self.host,
            "env_set": self.env_set,
            "env_unset": self.env_unset,
            "env": self.env,
            "pid": self.pid,
            "launched_at": self.launched_at,
            "status": self.status,
            "warnings": self.warnings,
            "machine": self.machine,
            "placement": self.placement,
            "benchmark": self.benchmark,
        }
        record.update({key: getattr(self, key) for key in _LATER if getattr(self, key) is not None})
        return record

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Launch:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def read_launch(path: str | Path) -> Launch:
    try:
        return Launch.from_json(_record(path, "launch"))
    except (AttributeError, TypeError, ValueError) as error:  # AttributeError: a JSON list or string, not an object
        raise DamagedFile(Path(path), f"not a launch record: {error!r}") from None


def load_launches(paths: Iterable[str | Path]) -> dict[str, Launch]:
    return {configuration_of_file(p): read_launch(p) for p in paths}


# Load windows (benchmark.load): results/<cfg>/load/<level>/window_<w>.json
WARMUP = "warmup"  # window_file(cfg, level, WARMUP): the discarded warmup window of a level


def window_file(cfg: str, level: str, w: int | str, root: str | Path = ROOT) -> str:
    return "/".join((load_dir(cfg, root), level, f"window_{w}.json"))


def is_warmup_window(path: str | Path) -> bool:
    """results/<cfg>/load/<level>/window_warmup.json: a level's discarded warmup window."""
    return Path(path).name == Path(window_file("", "", WARMUP)).name


def configuration_of_window(path: str | Path) -> str:
    """results/<cfg>/load/<level>/window_<w>.json -> <cfg>."""
    return Path(path).parents[2].name


# Tables and figures of load levels and prompt categories (docs/load.md).
LOAD_TABLE = _under("load.csv")
SLO_RATE_TABLE = _under("slo_rate.csv")  # the rate search's found rate per configuration
REQUESTS_TABLE = _under("requests.csv")
CATEGORIES_TABLE = _under("categories.csv")
# Hugging Face datasets exported once as prompt files (plan/workload.py hugging_face_file).
WORKLOADS = _under("workloads")
# The speculation setting per batch size, in vLLM's dynamic schedule form (analyse/schedule.py).
SPECULATION_SCHEDULE = _under("speculation_schedule.json")
# The search's next values of the swept speculative flag, and the next round as a config fragment (analyse/search.py).
NEXT_VALUES = _under("next_values.json")
NEXT_ROUND = _under("next_round.yaml")
# The load levels in `vllm bench serve --save-result` field names (report/benchserve.py).
BENCH_SERVE = _under("bench_serve.json")
BENCH_SERVE_DIR = _under("bench_serve")  # <configuration>/<level>.json: vLLM's file; .requests.jsonl beside it


@dataclass(frozen=True)
class WindowRequest:
    """One request of a load window: when it was sent, every token-carrying event's arrival (delta-encoded
    integer microseconds after sending, specsweep.analyse.latency), tokens, and the response's own counts."""

    index: int
    sent_s: float  # seconds after the window started
    prompt_index: int
    category: str
    tokens: int
    e2e_s: float
    arrivals_us: list[int]
    event_tokens: list[int]
    text_sha256: str
    engine_decode_tok_s: float | None = None  # llama.cpp timings.predicted_per_second
    drafted: int | None = None
    accepted: int | None = None
    malformed_events: int = 0
    exact_events: bool = False  # each event said how many tokens it carried (record/tokens.py)
    prompt_tokens: int | None = None  # the engine's prompt count (usage.prompt_tokens); None in older records

    @property
    def flagged(self) -> str | None:
        """Why the engine's count disagrees with the stream (record/tokens.py): then no table counts it."""
        return token_count.disagreement(self.tokens, sum(self.event_tokens), len(self.event_tokens), self.exact_events)

    @property
    def tokens_per_event(self) -> list[int]:
        """The tokens each event carried, summing to the engine's count (aligned with ``arrivals_us``)."""
        return token_count.per_event(self.tokens, self.event_tokens)

    @property
    def ended_s(self) -> float:
        """When its last token arrived, seconds after the window started: the end every steady-interval
        rule uses, so that the interval is recomputed from the record alone."""
        return self.sent_s + self.e2e_s

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WindowRequest:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class Window:
    """One measured repetition at a load level: a window of requests (specsweep.measure.load).

    ``steady_start_s`` and ``steady_end_s`` (seconds after the window started) bound its steady
    interval (measure.load.steady_interval), from which the tables take throughput and latency; records
    made before there was one have None in both, and their whole window counts. A ``warmup`` window is
    measured and kept before a level's windows but is in no table."""

    level: dict[str, Any]  # LoadLevel.as_dict(): kind, value, label
    window: int
    started_at: str
    duration_s: float  # first send to last end
    requests: list[WindowRequest]
    counter_delta: dict[str, float] = field(default_factory=dict)  # window totals of the engine's counters
    steady_start_s: float | None = None
    steady_end_s: float | None = None
    warmup: bool = False
    telemetry: dict[str, Any] | None = None  # sampled while the window was measured (measure/telemetry.py)
    # an open-loop window's arrival shape (load_levels.Arrivals.as_dict); None: closed loop, or an older
    # record (Poisson then)
    arrivals: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        return self.level["label"]

    @property
    def tokens(self) -> int:
        """Tokens its requests produced, as the engine counted them; none of a flagged request."""
        return sum(r.tokens for r in self.requests if not r.flagged)

    @property
    def output_tokens_per_s(self) -> float:
        return self.tokens / self.duration_s

    @property
    def requests_per_s(self) -> float:
        return len(self.requests) / self.duration_s

    @property
    def steady(self) -> tuple[float, float]:
        """The steady interval (the whole window for a record of the earlier method)."""
        if self.steady_start_s is None or self.steady_end_s is None:
            return 0.0, self.duration_s
        return self.steady_start_s, self.steady_end_s

    def in_steady(self, request: WindowRequest) -> bool:
        """Whether ``request`` was sent and ended within the steady interval (the latency percentiles' sample)."""
        start, end = self.steady
        return start <= request.sent_s and request.ended_s <= end

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RECORD_FORMAT,
            "level": self.level,
            "arrivals": self.arrivals,
            "window": self.window,
            "warmup": self.warmup,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "steady_start_s": self.steady_start_s,
            "steady_end_s": self.steady_end_s,
            "output_tokens_per_s": self.output_tokens_per_s,  # derived, for a reader of the file
            "requests_per_s": self.requests_per_s,
            "counter_delta": self.counter_delta,
            "telemetry": self.telemetry,
            "requests": [r.to_json() for r in self.requests],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Window:
        window = cls(
            level=data["level"],
            window=data["window"],
            started_at=data.get("started_at", ""),
            duration_s=float(data["duration_s"]),
            requests=[WindowRequest.from_json(r) for r in data["requests"]],
            counter_delta=data.get("counter_delta") or {},
            steady_start_s=data.get("steady_start_s"),
            steady_end_s=data.get("steady_end_s"),
            warmup=bool(data.get("warmup", False)),
            telemetry=data.get("telemetry"),
            arrivals=data.get("arrivals"),
        )
        if not window.duration_s > 0:  # also NaN: every rate of the window divides by it
            raise ValueError(f"duration_s is {data['duration_s']!r}, not a positive number of seconds")
        return window


def read_window(path: str | Path) -> Window:
    try:
        return Window.from_json(_record(path, "window"))
    except (AttributeError, KeyError, TypeError, ValueError) as error:  # JSONDecodeError is a ValueError
        raise DamagedFile(Path(path), f"not a window record: {error!r}") from None


def load_windows(paths: Iterable[str | Path]) -> dict[str, list[Window]]:
    """Window records per configuration, in the order given."""
    windows: dict[str, list[Window]] = {}
    for path in paths:
        windows.setdefault(configuration_of_window(path), []).append(read_window(path))
    return windows


@dataclass(frozen=True)
class RateProbe:
    """One window of the SLO rate search (measure/rate_search.py) at ``rate`` requests/s and its verdict."""

    rate: float
    verdict: str  # meets, misses or saturated
    why: str
    requests: int  # the requests judged: those sent within the window's steady interval
    measured_ms: dict[str, float] = field(default_factory=dict)  # objective key -> the window's percentile
    duration_s: float = 0.0

    @property
    def meets(self) -> bool:
        return self.verdict == "meets"


@dataclass(frozen=True)
class RateSearchRecord:
    """A session's SLO rate search: the range and resolution it bisected, its probes in order, and the
    highest rate that met every objective (None: even ``low`` missed)."""

    low: float
    high: float
    steps: int
    resolution: float  # (high - low) / 2**steps: the answer lies this close below the boundary
    probes: list[RateProbe]
    found_rate: float | None
    arrivals: dict[str, Any] | None = None  # the probes' arrival shape (load_levels.Arrivals.as_dict)

    @property
    def at_ceiling(self) -> bool:
        """Every probe met the SLOs: the highest rate that does may lie above ``high``."""
        return self.found_rate is not None and all(p.meets for p in self.probes)

    def to_json(self) -> dict[str, Any]:
        return {"format": RECORD_FORMAT, **asdict(self), "at_ceiling": self.at_ceiling}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RateSearchRecord:
        return cls(
            low=float(data["low"]),
            high=float(data["high"]),
            steps=int(data["steps"]),
            resolution=float(data["resolution"]),
            probes=[RateProbe(**p) for p in data["probes"]],
            found_rate=None if data["found_rate"] is None else float(data["found_rate"]),
            arrivals=data.get("arrivals"),
        )


def read_rate_search(path: str | Path) -> RateSearchRecord:
    try:
        return RateSearchRecord.from_json(_record(path, "rate search"))
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise DamagedFile(Path(path), f"not a rate search record: {error!r}") from None


def load_rate_searches(paths: Iterable[str | Path]) -> dict[str, RateSearchRecord]:
    """results/<cfg>/load/rate_search.json records by configuration (session instance)."""
    return {Path(path).parents[1].name: read_rate_search(path) for path in paths}
