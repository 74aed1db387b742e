"""Telemetry of a measurement: GPU power, energy, clocks and throttling (NVML), a CPU's RAPL energy counter,
and what else used the machine (contention), while one run or one load window is measured.

A ``Sampler`` reads every source at ``benchmark.telemetry_hz`` (default ``RATE_HZ``) in its own thread: the
thread sleeps on an ``Event`` until the next tick (no busy polling) and never runs in the measuring client's
thread. One sample is taken as it starts and one as it stops, both outside the request. Contention is read
from ``/proc`` at start and stop only (two scans, outside the request): the machine's busy CPU time
(``/proc/stat``) minus that of the measuring process and its descendants (the engine is one) is what other
processes used; steal is the hypervisor's share; load average is kept beside it.

The record (``Sampler.record``, kept as ``telemetry`` in the run or window record) is columnar: one list of
integers per quantity, sample times delta-encoded in ms, so energy can be recomputed from the archive
(``energy_of``). Format and meaning of every field: docs/energy.md.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "specsweep-telemetry/1"
RATE_HZ = 10.0  # benchmark.telemetry_hz: samples per second of each source (0 switches telemetry off)
POWERCAP = Path("/sys/class/powercap")
PROC = Path("/proc")

# Contention thresholds (docs/energy.md): a measurement during which other processes used more than
# OTHER_CPU_PCT of the machine's CPU time, the hypervisor stole more than STEAL_PCT, or another process
# held one of the engine's GPUs, is contended.
OTHER_CPU_PCT = 10.0
STEAL_PCT = 5.0
# ... and only when the other processes' CPU time is at least this: /proc counts in ticks (10 ms), so in
# a run of a tenth of a second two ticks of a kernel thread are already "11 %" (tick noise, not contention).
MIN_OTHER_CPU_S = 0.1

# NVML clocks-event reasons that slow the clocks (GPU idle and the application-clocks setting do not).
SLOWDOWNS = {
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x20: "thermal (software)",
    0x40: "thermal (hardware)",
    0x80: "power brake",
}

NOT_MEASURED = "not measured"
NVML_COUNTER = "nvml energy counter"
NVML_INTEGRATED = "nvml integrated power"
RAPL = "rapl"

# (record key, NVML reading) of each GPU quantity sampled; integers, units in the key.
_GPU_FIELDS: tuple[tuple[str, Callable[[Any, Any], int]], ...] = (
    ("power_mw", lambda n, h: n.nvmlDeviceGetPowerUsage(h)),  # a 1 s running average on GA100 and later
    ("power_instant_mw", lambda n, h: _instant_power(n, h)),
    ("energy_mj", lambda n, h: n.nvmlDeviceGetTotalEnergyConsumption(h)),
    ("sm_mhz", lambda n, h: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)),
    ("mem_mhz", lambda n, h: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM)),
    ("util_pct", lambda n, h: n.nvmlDeviceGetUtilizationRates(h).gpu),
    ("mem_used_mib", lambda n, h: n.nvmlDeviceGetMemoryInfo(h).used // 2**20),
    ("temp_c", lambda n, h: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)),
    ("clocks_event_reasons", lambda n, h: _clocks_event_reasons(n, h)),
)


def _instant_power(nvml: Any, handle: Any) -> int:
    """Instantaneous power (mW, NVML_FI_DEV_POWER_INSTANT), what integration needs: ``nvmlDeviceGetPowerUsage``
    averages over about a second on GA100 and later GPUs, which would smear a short run's start and end."""
    (found,) = nvml.nvmlDeviceGetFieldValues(handle, [nvml.NVML_FI_DEV_POWER_INSTANT])
    if found.nvmlReturn != 0:
        raise nvml.NVMLError(found.nvmlReturn)
    return int(found.value.uiVal)


def _clocks_event_reasons(nvml: Any, handle: Any) -> int:
    reader = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)  # the older name before driver 535
    return int((reader or nvml.nvmlDeviceGetCurrentClocksThrottleReasons)(handle))


def load_nvml() -> Any:
    """The NVML binding (nvidia-ml-py's ``pynvml``), initialised; raises when there is no driver or GPU.
    Tests replace this function: the module boundary of every NVML call."""
    import pynvml

    pynvml.nvmlInit()  # reference-counted by the library; never shut down (the job's process ends)
    return pynvml


@dataclass
class _Gpus:
    """The engine's GPUs through NVML, and which of the sampled quantities each supports."""

    nvml: Any
    handles: dict[str, Any]  # NVML index -> handle
    supported: dict[str, list[str]] = field(default_factory=dict)

    def read(self) -> dict[str, list[int | None]]:
        values: dict[str, list[int | None]] = {}
        for index, handle in self.handles.items():
            for key, reading in _GPU_FIELDS:
                if key in self.supported[index]:
                    values[f"{index}/{key}"] = [_or_none(self.nvml, reading, handle)]
        return values

    def processes(self) -> list[dict[str, int]]:
        """Compute processes on these GPUs: pid, GPU and MiB."""
        found = []
        for index, handle in self.handles.items():
            with contextlib.suppress(Exception):  # not supported on this GPU or driver: nothing known
                for process in self.nvml.nvmlDeviceGetComputeRunningProcesses(handle):
                    used = getattr(process, "usedGpuMemory", None)
                    found.append({"gpu": int(index), "pid": int(process.pid), "mib": (used or 0) // 2**20})
        return found


def _or_none(nvml: Any, reading: Callable[[Any, Any], int], handle: Any) -> int | None:
    try:
        return int(reading(nvml, handle))
    except nvml.NVMLError:
        return None


def open_gpus(visible: list[int] | None, load: Callable[[], Any] | None = None) -> tuple[_Gpus | None, str]:
    """The GPUs to sample (``visible``: NVML indices, None: all), or None and why not."""
    try:
        nvml = (load or load_nvml)()
        count = nvml.nvmlDeviceGetCount()
    except Exception as error:  # ImportError, NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return None, f"no GPU visible through NVML ({type(error).__name__}: {error})"
    indices = [i for i in range(count) if visible is None or i in visible]
    if not indices:
        return None, f"no GPU visible through NVML ({count} GPU(s), none of {visible})"
    gpus = _Gpus(nvml, {str(i): nvml.nvmlDeviceGetHandleByIndex(i) for i in indices})
    for index, handle in gpus.handles.items():
        gpus.supported[index] = [key for key, reading in _GPU_FIELDS if _or_none(nvml, reading, handle) is not None]
    return gpus, ""


@dataclass
class _Rapl:
    """Package energy counters of a CPU (Intel RAPL through powercap); top-level zones only: their
    sub-zones (core, uncore, dram) are parts of the package's energy and would count twice."""

    zones: dict[str, Path]  # zone name (package-0) -> its energy_uj
    max_uj: dict[str, int]

    def read(self) -> dict[str, list[int | None]]:
        return {f"{zone}/energy_uj": [_read_int(path)] for zone, path in self.zones.items()}


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def open_rapl(root: Path = POWERCAP) -> tuple[_Rapl | None, str]:
    """The readable RAPL package zones under ``root``, or None and why not."""
    zones = sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1)
    if not zones:
        return None, f"no RAPL energy counter ({root} has no intel-rapl zone)"
    readable = {
        (zone / "name").read_text().strip() if (zone / "name").exists() else zone.name: zone / "energy_uj"
        for zone in zones
        if _read_int(zone / "energy_uj") is not None
    }
    if not readable:
        return None, f"the RAPL energy counter is not readable ({zones[0] / 'energy_uj'}: root only on this kernel)"
    maxima = {name: _read_int(path.parent / "max_energy_range_uj") or 0 for name, path in readable.items()}
    return _Rapl(readable, maxima), ""


@dataclass(frozen=True)
class _CpuTimes:
    busy: int  # user + nice + system + irq + softirq (guest time is inside user), clock ticks of all CPUs
    steal: int
    total: int  # every state but guest: the machine's CPU capacity over the same time


def _cpu_times(proc: Path = PROC) -> _CpuTimes:
    fields = [int(x) for x in (proc / "stat").read_text().split("\n", 1)[0].split()[1:9]]
    fields += [0] * (8 - len(fields))  # an old kernel without steal
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return _CpuTimes(user + nice + system + irq + softirq, steal, sum(fields))


@dataclass(frozen=True)
class _Process:
    command: str  # may change while it runs (a kernel worker names its current work queue)
    ppid: int
    ticks: int  # utime + stime: its own
    reaped: int  # cutime + cstime: its children's once reaped (all their life, not only the measurement)
    started: int  # start time after boot (ticks): tells a reused pid from the same process


def _processes(proc: Path = PROC) -> dict[int, _Process]:
    found = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:  # exited while listed
            continue
        command, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        utime, stime, cutime, cstime = (int(x) for x in rest[11:15])
        found[int(entry.name)] = _Process(command, int(rest[1]), utime + stime, cutime + cstime, int(rest[19]))
    return found


def _ours(processes: dict[int, _Process], root: int) -> set[int]:
    """``root`` and its descendants: the measuring process (the client), the engine it launched and its workers."""
    children: dict[int, list[int]] = {}
    for pid, process in processes.items():
        children.setdefault(process.ppid, []).append(pid)
    ours, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in ours:
            ours.add(pid)
            todo += children.get(pid, [])
    return ours


class _Contention:
    """What else used the machine between ``start`` and ``stop`` (see the module docstring)."""

    def __init__(self, client_pid: int, gpus: _Gpus | None, proc: Path = PROC) -> None:
        self.client_pid, self.gpus, self.proc = client_pid, gpus, proc
        self.ticks_per_s = os.sysconf("SC_CLK_TCK")

    def start(self) -> None:
        self.cpu0, self.processes0, self.load0 = _cpu_times(self.proc), _processes(self.proc), os.getloadavg()[0]

    def stop(self) -> dict[str, Any]:
        cpu, processes, load = _cpu_times(self.proc), _processes(self.proc), os.getloadavg()[0]
        ours = _ours(processes, self.client_pid)

        def used(pid: int, reaped: bool = False) -> int:  # a process started during the measurement: all its time
            now, before = processes[pid], self.processes0.get(pid)
            if before is None or before.started != now.started:
                before = _Process(now.command, now.ppid, 0, 0, now.started)
            return now.ticks - before.ticks + (now.reaped - before.reaped if reaped else 0)

        busy, total = cpu.busy - self.cpu0.busy, max(1, cpu.total - self.cpu0.total)
        # ours with the children they reaped meanwhile (an engine worker that exited): theirs is not contention
        other = max(0, busy - sum(used(pid, reaped=True) for pid in ours))
        top = sorted(((used(pid), pid) for pid in processes if pid not in ours), reverse=True)[:3]
        gpu_others = [p for p in (self.gpus.processes() if self.gpus else []) if p["pid"] not in ours]
        return {
            "other_cpu_s": round(other / self.ticks_per_s, 2),
            "other_cpu_pct": round(100 * other / total, 1),
            "steal_pct": round(100 * (cpu.steal - self.cpu0.steal) / total, 1),
            "load_average_1m": [round(self.load0, 2), round(load, 2)],
            "top_other": [
                {"pid": pid, "command": processes[pid].command, "cpu_s": round(ticks / self.ticks_per_s, 2)}
                for ticks, pid in top
                if ticks > 0
            ],
            "gpu_other_processes": gpu_others,
        }


def contended(contention: dict[str, Any] | None) -> str | None:
    """Why a measurement counts as contended (the documented thresholds above), or None."""
    if not contention:
        return None
    reasons = []
    if contention["other_cpu_pct"] > OTHER_CPU_PCT and contention["other_cpu_s"] >= MIN_OTHER_CPU_S:
        names = ", ".join(f"{p['command']} {p['cpu_s']:g} s" for p in contention["top_other"])
        reasons.append(
            f"other processes used {contention['other_cpu_pct']:g} % of the CPUs "
            f"({names or 'processes that ended before the measurement did'})"
        )
    if contention["steal_pct"] > STEAL_PCT:
        reasons.append(f"CPU steal {contention['steal_pct']:g} %")
    if contention["gpu_other_processes"]:
        pids = ", ".join(f"{p['pid']} on GPU {p['gpu']}" for p in contention["gpu_other_processes"])
        reasons.append(f"other processes on the engine's GPUs ({pids})")
    return "; ".join(reasons) or None


class Sampler:
    """Samples every source at ``rate_hz`` in its own thread between ``__enter__`` and ``__exit__``."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.times: list[float] = []
        self.columns: dict[str, list[int | None]] = {}
        self.contention: dict[str, Any] | None = None
        self._stop = threading.Event()
        self._probe = _Contention(os.getpid(), watch.gpus, watch.proc)

    def _sample(self) -> None:
        self.times.append(time.monotonic())
        for source in (self.watch.gpus, self.watch.rapl):
            if source is not None:
                for key, value in source.read().items():
                    self.columns.setdefault(key, []).extend(value)

    def _loop(self) -> None:
        period, start = 1.0 / self.watch.rate_hz, self.times[0]
        tick = 1
        while not self._stop.wait(max(0.0, start + tick * period - time.monotonic())):
            self._sample()
            tick = max(tick + 1, int((time.monotonic() - start) / period) + 1)  # a slow read skips, never bunches

    def __enter__(self) -> Sampler:
        self._probe.start()
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="specsweep-telemetry", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self.contention = self._probe.stop()

    @property
    def record(self) -> dict[str, Any]:
        """The compact record kept in the run or window record (docs/energy.md)."""
        start = self.times[0]
        stamps = [round(1000 * (t - start)) for t in self.times]
        watch = self.watch
        return {
            "format": FORMAT,
            "rate_hz": watch.rate_hz,
            "duration_s": round(self.times[-1] - start, 4),
            "t_ms": [b - a for a, b in zip([0, *stamps], stamps, strict=False)],
            "gpus": {
                index: {key.split("/", 1)[1]: v for key, v in self.columns.items() if key.split("/")[0] == index}
                for index in (watch.gpus.handles if watch.gpus else {})
            },
            "rapl": {
                zone: {"energy_uj": self.columns[f"{zone}/energy_uj"], "max_energy_range_uj": watch.rapl.max_uj[zone]}
                for zone in (watch.rapl.zones if watch.rapl else {})
            },
            "not_measured": watch.why_not,
            "contention": self.contention,
        }


@dataclass
class Watch:
    """What a session samples: its GPUs, a readable RAPL counter, and why energy is not measured if neither."""

    rate_hz: float
    gpus: _Gpus | None
    rapl: _Rapl | None
    why_not: str | None = None
    proc: Path = PROC

    def describe(self) -> str:
        """One console line: what is sampled, or why energy is not measured."""
        if self.rate_hz <= 0:
            return self.why_not or "telemetry off"
        sources = [f"GPU {', '.join(self.gpus.handles)} (NVML)"] if self.gpus else []
        sources += [f"RAPL {', '.join(self.rapl.zones)}"] if self.rapl else []
        energy = f"energy from {' and '.join(sources)}" if sources else f"energy {self.why_not}"
        return f"telemetry at {self.rate_hz:g} Hz: {energy}; contention from /proc"

    @contextlib.contextmanager
    def sampled(self) -> Iterator[Sampler | None]:
        """A sampler running while the block runs; None when telemetry is off (``benchmark.telemetry_hz: 0``)."""
        if self.rate_hz <= 0:
            yield None
            return
        with Sampler(self) as sampler:
            yield sampler


def watch(
    benchmark: dict[str, Any], env: dict[str, Any], powercap: Path = POWERCAP, load: Callable[[], Any] | None = None
) -> Watch:
    """The session's telemetry: the GPUs its ``CUDA_VISIBLE_DEVICES`` names (all when unset), else RAPL."""
    rate = float(benchmark.get("telemetry_hz", RATE_HZ))
    if rate <= 0:
        return Watch(0.0, None, None, "telemetry off (benchmark.telemetry_hz: 0)")
    visible = str(env.get("CUDA_VISIBLE_DEVICES") or "")
    indices = (
        [int(i) for i in visible.split(",")]
        if visible and all(i.strip().isdigit() for i in visible.split(","))
        else None
    )
    gpus, no_gpu = open_gpus(indices, load)
    rapl, no_rapl = open_rapl(powercap)
    return Watch(rate, gpus, rapl, None if gpus or rapl else f"{NOT_MEASURED}: {no_gpu}; {no_rapl}")


def sampled_record(sampler: Sampler | None) -> dict[str, Any] | None:
    return None if sampler is None else sampler.record


# Energy from a record: the one arithmetic of joules (summary, load table, the agreement check).
@dataclass(frozen=True)
class Energy:
    joules: float | None  # None: not measured
    source: str  # NVML_COUNTER, NVML_INTEGRATED, RAPL, or "not measured: why"
    duration_s: float
    integrated_j: float | None = None  # GPU power integrated (trapezoid), beside the counter where both exist
    counter_j: float | None = None  # GPU energy counter difference

    @property
    def watts(self) -> float | None:
        return self.joules / self.duration_s if self.joules is not None and self.duration_s > 0 else None


def sample_times_s(record: dict[str, Any]) -> list[float]:
    times, now = [], 0
    for delta in record["t_ms"]:
        now += delta
        times.append(now / 1000)
    return times


def integrate(times_s: list[float], values: list[int | None], scale: float) -> float | None:
    """Trapezoid integral of ``values`` * ``scale`` over time; None with a gap or fewer than two samples."""
    if len(values) < 2 or any(v is None for v in values):
        return None
    pairs = list(zip(times_s, values, strict=True))
    return scale * sum((t1 - t0) * (v0 + v1) / 2 for (t0, v0), (t1, v1) in itertools.pairwise(pairs))


def counter_difference(values: list[int | None], scale: float, wrap: int = 0) -> float | None:
    """Sum of successive differences of a cumulative counter (wrapped at ``wrap`` + 1 when given)."""
    known = [v for v in values if v is not None]
    if len(known) < 2 or len(known) != len(values):
        return None
    total = 0
    for a, b in itertools.pairwise(known):
        total += b - a if b >= a else b - a + wrap + 1
    return scale * total


def energy_of(record: dict[str, Any] | None) -> Energy:
    """The measurement's energy: the GPUs' (counter where every GPU has one, else integrated power), else the
    CPU package's RAPL counter, else not measured with why."""
    if not record:
        return Energy(None, f"{NOT_MEASURED}: no telemetry recorded", 0.0)
    duration, times = float(record["duration_s"]), sample_times_s(record)
    gpus = record.get("gpus") or {}
    if gpus:
        counters = [counter_difference(g.get("energy_mj", []), 1e-3) for g in gpus.values()]
        # instantaneous power where each GPU gives it, else the (averaged) power draw
        powers = [integrate(times, g.get("power_instant_mw") or g.get("power_mw", []), 1e-3) for g in gpus.values()]
        integrated = None if None in powers else sum(p for p in powers if p is not None)
        counter = None if None in counters else sum(c for c in counters if c is not None)
        if counter is not None:
            return Energy(counter, NVML_COUNTER, duration, integrated, counter)
        if integrated is not None:
            return Energy(integrated, NVML_INTEGRATED, duration, integrated, None)
    rapl = record.get("rapl") or {}
    if rapl:
        zones = [counter_difference(z["energy_uj"], 1e-6, z.get("max_energy_range_uj", 0)) for z in rapl.values()]
        if None not in zones:
            return Energy(sum(z for z in zones if z is not None), f"{RAPL} ({', '.join(rapl)})", duration)
    return Energy(None, record.get("not_measured") or f"{NOT_MEASURED}: samples incomplete", duration)


def mean_of(record: dict[str, Any] | None, key: str) -> float | None:
    """Mean of one GPU quantity over every sample of every GPU (e.g. ``sm_mhz``), None when not sampled."""
    values = [v for g in ((record or {}).get("gpus") or {}).values() for v in g.get(key, []) if v is not None]
    return sum(values) / len(values) if values else None


def slowdowns(record: dict[str, Any] | None) -> list[str]:
    """The clock slowdowns (``SLOWDOWNS``) any sample of any GPU reported, by name."""
    seen = 0
    for gpu in ((record or {}).get("gpus") or {}).values():
        for mask in gpu.get("clocks_event_reasons", []):
            seen |= mask or 0
    return [name for bit, name in SLOWDOWNS.items() if seen & bit]


def counter_step_s(record: dict[str, Any]) -> float:
    """How finely the measurement resolves energy in time: the median time between changes of any GPU's energy
    counter (NVML updates it in steps, tens of ms on recent GPUs), or the sample spacing where it is coarser."""
    times = sample_times_s(record)
    spacing = times[-1] / (len(times) - 1) if len(times) > 1 else float("inf")
    steps = []
    for gpu in (record.get("gpus") or {}).values():
        counter = gpu.get("energy_mj") or []
        changed = [t for t, a, b in zip(times[1:], counter, counter[1:], strict=False) if a is not None and b != a]
        steps += [b - a for a, b in itertools.pairwise(changed)]
    return max(spacing, statistics.median(steps)) if steps else spacing


def agreement(record: dict[str, Any] | None) -> float | None:
    """(integrated power - energy counter) / energy counter over the measurement, or None without both."""
    found = energy_of(record)
    if found.counter_j is None or found.integrated_j is None or found.counter_j <= 0:
        return None
    return (found.integrated_j - found.counter_j) / found.counter_j
