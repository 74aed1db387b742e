"""Load levels: what ``benchmark.load`` asks for, the seeded schedules, and the checks before launch.

Three kinds of level (``benchmark.load`` in the config):

* ``concurrency: N`` - closed loop: N requests in flight, the next sent as soon as one finishes;
* ``request_rate: R`` - open loop: R requests/s on average from a seeded generator, so a rerun (and every
  configuration) sends the same schedule. The gaps follow ``arrivals`` (sweep-wide, so labels stay r<R>):
  gamma gaps of shape ``burstiness`` as vLLM's ``--burstiness`` (1: Poisson), or ``constant`` ones;
* ``ramp_up: {strategy, start, end}`` - one open-loop level whose rate rises within each window, as vLLM's
  ``--ramp-up-strategy``.

A measured repetition is a window of ``requests_per_window`` requests (``specsweep.measure.load``),
of which the steady interval counts; each level's windows follow one discarded warmup window.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specsweep.engines import ADAPTERS
from specsweep.engines.base import Engine
from specsweep.plan.config import ConfigError, Configuration
from specsweep.plan.rate_search import rate_search_of

CONCURRENCY = "concurrency"
REQUEST_RATE = "request_rate"
RAMP_UP = "ramp_up"
SINGLE = "single"  # the load label of the single-request runs (an idle server, one request at a time)
LINEAR, EXPONENTIAL = "linear", "exponential"
GAMMA, CONSTANT = "gamma", "constant"  # the open loop's arrival shapes (Arrivals)
# A closed-loop window holds at least this many times its concurrency in requests: the opening burst
# (C), a steady interval that holds whole requests (about C), and the drain (C).
REQUESTS_PER_SLOT = 4


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


@dataclass(frozen=True)
class LoadLevel:
    kind: str  # CONCURRENCY, REQUEST_RATE or RAMP_UP
    value: float  # requests in flight, requests/s, or a ramp's last rate
    start: float | None = None  # RAMP_UP: the rate of its first request
    strategy: str | None = None  # RAMP_UP: LINEAR or EXPONENTIAL

    @property
    def label(self) -> str:
        """Path component and table key: c4, r2.5, ramp1-8 (linear), ramp1-8exp (exponential)."""
        if self.kind == RAMP_UP:
            return (
                f"ramp{_number(self.start or 0)}-{_number(self.value)}{'exp' if self.strategy == EXPONENTIAL else ''}"
            )
        return f"{'c' if self.kind == CONCURRENCY else 'r'}{_number(self.value)}"

    @property
    def in_flight(self) -> int | None:
        """Requests the server must hold at once (None: depends on the arrivals)."""
        return int(self.value) if self.kind == CONCURRENCY else None

    def rates(self, requests: int) -> list[float]:
        """An open-loop level's rate at each request (requests/s). A ramp goes from ``start`` to ``value`` as
        vLLM's --ramp-up-strategy (``_get_current_request_rate`` in vllm/benchmarks/serve.py): at request i
        of n, progress p = i / (n - 1); linear start + (end - start) p, exponential start (end / start)^p."""
        if self.kind != RAMP_UP or self.start is None:
            return [float(self.value)] * requests
        progress = [i / max(requests - 1, 1) for i in range(requests)]
        if self.strategy == EXPONENTIAL:
            return [self.start * (self.value / self.start) ** p for p in progress]
        return [self.start + (self.value - self.start) * p for p in progress]

    def as_dict(self) -> dict[str, Any]:
        ramp = {"start": self.start, "strategy": self.strategy} if self.kind == RAMP_UP else {}
        return {"kind": self.kind, "value": self.value, "label": self.label, **ramp}


def warmup_windows(benchmark: dict[str, Any]) -> bool:
    """Whether each level starts with a discarded warmup window (``benchmark.load.warmup``)."""
    return bool((benchmark.get("load") or {}).get("warmup", True))


def levels_of(benchmark: dict[str, Any]) -> list[LoadLevel]:
    """The load levels of a validated config, concurrency first, a ramp last (empty without ``benchmark.load``)."""
    load = benchmark.get("load") or {}
    ramp = load.get(RAMP_UP)
    return (
        [LoadLevel(CONCURRENCY, int(n)) for n in load.get(CONCURRENCY, [])]
        + [LoadLevel(REQUEST_RATE, float(r)) for r in load.get(REQUEST_RATE, [])]
        + ([LoadLevel(RAMP_UP, float(ramp["end"]), float(ramp["start"]), ramp["strategy"])] if ramp else [])
    )


def check_slots(
    configurations: dict[str, Configuration],
    levels: list[LoadLevel],
    slots_of: Callable[[Configuration], tuple[str, int] | None],
    requests_per_window: int,
) -> None:
    """Before anything starts: every configuration's engine can hold the highest concurrency at once."""
    wanted = max((level.in_flight or 0 for level in levels), default=0)
    if REQUESTS_PER_SLOT * wanted > requests_per_window:
        raise ConfigError(
            f"benchmark/load/requests_per_window: {requests_per_window} requests at concurrency {wanted} are "
            f"one burst (all start and end together), with no steady interval of {wanted} requests in flight; "
            f"set it to at least {REQUESTS_PER_SLOT * wanted} ({REQUESTS_PER_SLOT} x the highest concurrency)"
        )
    for configuration in configurations.values():
        setting = slots_of(configuration)
        if setting is not None and setting[1] < wanted:
            flag, slots = setting
            raise ConfigError(
                f"configuration {configuration.name}: {flag} {slots} serves {slots} request(s) at once "
                f"but benchmark/load/concurrency asks for {wanted}; set {flag} to at least {wanted} "
                f"(engines/{configuration.engine}/args or configurations/{configuration.group}/args), "
                f"or lower the concurrency",
                key=("configurations", configuration.group, "args", flag),
                alternatives=(
                    ("configurations", configuration.group, "grid", "args", flag),
                    ("engines", configuration.engine, "args", flag),
                ),
            )


@dataclass(frozen=True)
class Arrivals:
    """The open loop's gaps between arrivals (``benchmark.load.arrivals``, ``burstiness``), as vLLM's
    ``get_request`` (vllm/benchmarks/serve.py) defines them: gamma with shape ``burstiness`` and scale
    1 / (rate x burstiness), so the mean gap is 1/rate whatever the burstiness and the coefficient of
    variation 1/sqrt(burstiness): 1 is Poisson, below 1 burstier, large nearly constant; ``constant`` is
    vLLM's burstiness = inf, every gap 1/rate."""

    shape: str = GAMMA  # GAMMA or CONSTANT
    burstiness: float = 1.0

    def times(self, rates: list[float], seed: int) -> list[float]:
        """Request 0 at 0 s, then request i a seeded gap of mean 1/rates[i] after request i - 1."""
        generator = random.Random(seed)
        times = [0.0]
        for rate in rates[1:]:
            times.append(times[-1] + self._gap(generator, rate))
        return times

    def _gap(self, generator: random.Random, rate: float) -> float:
        if self.shape == CONSTANT:
            return 1.0 / rate
        if self.burstiness == 1.0:  # the exponential draw: the schedules of records made before burstiness
            return generator.expovariate(rate)
        return generator.gammavariate(self.burstiness, 1.0 / (rate * self.burstiness))

    def as_dict(self) -> dict[str, Any]:
        """What a window record keeps; ``burstiness`` as vLLM writes it (its result files' inf: constant)."""
        return {"shape": self.shape, "burstiness": "inf" if self.shape == CONSTANT else self.burstiness}


POISSON = Arrivals()  # the default: burstiness 1


def arrivals_of(benchmark: dict[str, Any]) -> Arrivals:
    """The sweep's open-loop arrivals (``benchmark.load.arrivals`` and ``burstiness``; Poisson by default)."""
    load = benchmark.get("load") or {}
    shape = load.get("arrivals", GAMMA)
    if shape == CONSTANT and "burstiness" in load:
        raise ConfigError(
            f"benchmark/load/burstiness: {load['burstiness']} shapes gamma gaps, but benchmark/load/arrivals is "
            f"constant (every gap 1/rate); remove burstiness, or set arrivals: gamma"
        )
    return Arrivals(shape, float(load.get("burstiness", 1.0)))


def arrival_times(rate: float, requests: int, seed: int, arrivals: Arrivals = POISSON) -> list[float]:
    """The open loop's send times at ``rate`` (Poisson unless ``arrivals`` says otherwise), seeded."""
    return arrivals.times([rate] * requests, seed)


def schedule(level: LoadLevel, requests: int, seed: int, arrivals: Arrivals = POISSON) -> list[float]:
    """An open-loop level's send times: at its rate, or along its ramp."""
    return arrivals.times(level.rates(requests), seed)


def window_seed(seed: int, window: int) -> int:
    """Each window has its own schedule; the same one for every configuration and every rerun."""
    return seed * 1000 + window


def _check_ramp(benchmark: dict[str, Any]) -> None:
    ramp = (benchmark.get("load") or {}).get(RAMP_UP)
    if ramp and ramp["start"] == ramp["end"]:
        raise ConfigError(
            f"benchmark/load/ramp_up/end: {ramp['end']} equals start, a constant rate; list it in "
            f"benchmark/load/request_rate instead"
        )


def check_load(benchmark: dict[str, Any], configurations: dict[str, Configuration]) -> None:
    """The load section and the chat-template option against each configuration's engine, before any launch."""
    if benchmark.get("chat_template"):
        for configuration in configurations.values():
            if ADAPTERS[configuration.kind].apply_chat_template is Engine.apply_chat_template:
                raise ConfigError(
                    f"benchmark/chat_template: engine kind {configuration.kind} (configuration "
                    f"{configuration.name}) cannot render the model's chat template here; set "
                    f"chat_template: false, or put the template into the prompts"
                )
    arrivals_of(benchmark)  # burstiness set with constant arrivals
    _check_ramp(benchmark)
    rate_search_of(benchmark)  # its range and objectives
    levels = levels_of(benchmark)
    if levels:
        check_slots(
            configurations, levels, lambda c: ADAPTERS[c.kind].slots(c), int(benchmark["load"]["requests_per_window"])
        )
