"""The sweep's design: which configurations are measured, in how many sessions, and in which order.

A session is one server launch. ``benchmark.sessions: N`` measures every configuration in N sessions:
the first is the configuration itself (``results/<name>/``), session k >= 2 is a configuration-instance
``<name>-s<k>`` (``session_name``, the one place instance names are made) with its own results folder
and bench job, ``session_of`` naming the configuration. The analysis groups instances by that field
(``sessions_of``) and takes the session as the unit of every interval and test (analyse/replicates.py).

Order: sessions are measured in rounds (every configuration's session k before any session k+1), each
round in its own seeded random order of every configuration, the baseline among them (a randomised
complete block design), through Snakemake priorities (no configuration depends on another, so a rerun of
one never reruns the others). Why not ABBA with the baseline first and last: on a shared machine the
sweep's first session ran faster (+1.4 to +4 % in 4 of 4 real A/A sweeps on this project's 2-core VM;
docs/summary.md, "Sessions and prompts"), and a configuration whose sessions sit side by side in the
middle of an ABBA order shares one stretch of machine state; both bias the comparisons against the
baseline alike, so a real A/A sweep called all three identical configurations "significantly slower".
Shuffled rounds give every configuration the same chance of each position. The shuffles are seeded by the
sweep's content (``order_seed``: every configuration's name and parameters), not by a constant: with one
seed for all, the order depended only on how many configurations there were (with 4-7 the 4th listed always
ran first), so the same position carried the first session's luck in every sweep.
``benchmark.order: bracket`` measures the baseline first and once more as ``<baseline>-end``, ordered
after every other session through its inputs, for the drift report (``drift`` compares the two); it is
one more session of the baseline. ``configurations_for`` is the one
way a job gets its configurations (with real values; Snakemake params hold fingerprints of secrets).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specsweep.plan.config import ConfigError, Configuration, check_engines, expand, expand_entry
from specsweep.record.results import run_file

ORDERS = ("sequential", "bracket")
END_SUFFIX = "-end"
SESSION_SUFFIX = "-s"
CONFIRM_SUFFIX = "-c"


def end_name(baseline: str) -> str:
    return baseline + END_SUFFIX


def session_name(name: str, session: int) -> str:
    """The configuration-instance measuring session ``session`` (1-based) of configuration ``name``."""
    return name if session == 1 else f"{name}{SESSION_SUFFIX}{session}"


def confirmation_name(name: str, session: int) -> str:
    """The fresh session ``session`` (1-based) that confirms configuration ``name`` after the sweep chose
    (analyse/confirm.py)."""
    return f"{name}{CONFIRM_SUFFIX}{session}"


def confirmations_of(configurations: Mapping[str, Configuration], sessions: int) -> dict[str, Configuration]:
    """Every confirmation session ``benchmark.confirm_sessions`` could measure, of every configuration: which
    two are measured is known only once summary.csv chose (the workflow's checkpoint), so any must be a job. One
    fresh session each takes its spread from the choosing sessions (analyse/confirm.py), so needs a sweep that
    measures some configuration in two or more."""
    if sessions == 1 and not any(c.session_of for c in configurations.values()):
        raise ConfigError(
            "benchmark/confirm_sessions: 1 fresh session each gives the confirmed speedup no interval when every "
            "configuration is measured in one session (no spread anywhere); use 0 (no confirmation), 2 or more, or "
            "benchmark.sessions >= 2"
        )
    found: dict[str, Configuration] = {}
    for configuration in measured_configurations(configurations).values():
        for session in range(1, sessions + 1):
            name = confirmation_name(configuration.name, session)
            found[name] = _instance(
                configuration,
                name,
                configurations,
                "benchmark/confirm_sessions",
                sessions,
                f"confirmation session {session} of {sessions}",
            )
    return found


def confirmation_priorities(confirmations: Mapping[str, Configuration], seed: int) -> dict[str, int]:
    """Scheduling priority of every confirmation session: round k (every chosen configuration's k-th) before
    round k + 1, each round in a random order seeded by the sweep (``order_seed``), as the design's sessions."""
    rounds = 1 + max((_confirmation_round(name) for name in confirmations), default=0)
    return {
        name: (rounds - _confirmation_round(name)) * 2**20
        + int.from_bytes(hashlib.sha256(f"{seed}/{name}".encode()).digest()[:2], "big")
        for name in confirmations
    }


def _confirmation_round(name: str) -> int:
    return int(name.rsplit(CONFIRM_SUFFIX, 1)[1])


@dataclass(frozen=True)
class SessionRange:
    """``benchmark.sessions`` read: every configuration ``min`` sessions, then, round by round, one more for the
    configurations whose answer is still open, up to ``max`` (analyse/sequential.py); an integer is min = max."""

    min: int
    max: int

    @property
    def looks(self) -> int:
        return self.max - self.min + 1

    @property
    def sequential(self) -> bool:
        return self.max > self.min


def session_range(benchmark: Mapping[str, Any]) -> SessionRange:
    value = benchmark.get("sessions", 1)
    if not isinstance(value, Mapping):
        return SessionRange(int(value), int(value))
    found = SessionRange(int(value["min"]), int(value["max"]))
    if found.max < found.min:
        raise ConfigError(
            f"benchmark/sessions: max {found.max} is below min {found.min}; give max >= min (or one integer)"
        )
    return found


def configurations_of(config: dict[str, Any]) -> dict[str, Configuration]:
    """Every configuration-instance of a validated config: grids expanded, each configuration's further
    sessions (``benchmark.sessions``) and, for ``benchmark.order: bracket``, the ``<baseline>-end``
    session added. What the workflow plans."""
    sessions = with_sessions(expand(config), session_range(config["benchmark"]).max)
    return with_end_baseline(sessions, config["benchmark"]["order"])


def _instance(
    configuration: Configuration, name: str, taken: Mapping[str, Configuration], key: str, sessions: int, which: str
) -> Configuration:
    """A further session of ``configuration`` named ``name``, measured as one of its replicates (never a
    baseline of its own, compared as its configuration is); refused where ``name`` is taken."""
    if name in taken:
        raise ConfigError(
            f"{key}: {sessions} adds a session '{name}' of '{configuration.name}', which already exists as a "
            "configuration; rename that configuration"
        )
    return dataclasses.replace(
        configuration,
        name=name,
        baseline=False,
        baseline_factors=[],
        compared_with=configuration.name if configuration.baseline else configuration.compared_with,
        session_of=configuration.name,
        description=f"{configuration.name}, {which} ({key.replace('/', '.')})",
    )


def with_sessions(configurations: dict[str, Configuration], sessions: int) -> dict[str, Configuration]:
    """Each configuration followed by its sessions 2..``sessions`` as instances (see the module doc)."""
    found = dict(configurations)
    for configuration in configurations.values():
        for session in range(2, sessions + 1):
            name = session_name(configuration.name, session)
            found[name] = _instance(
                configuration, name, found, "benchmark/sessions", sessions, f"session {session} of {sessions}"
            )
    return found


def sessions_of(configurations: Mapping[str, Configuration]) -> dict[str, list[str]]:
    """Each configuration (not an instance) with the names of its sessions, its own first, in session order."""
    found: dict[str, list[str]] = {name: [] for name, c in configurations.items() if c.session_of is None}
    for name, configuration in configurations.items():
        found[configuration.session_of or name].append(name)
    return found


def fixed_sessions(configurations: Mapping[str, Configuration], sessions: SessionRange) -> list[str]:
    """The sessions every run of the design measures, whatever its rounds decide: each configuration's first
    ``sessions.min`` (all of them for a fixed number) and the bracket's ``<baseline>-end``."""
    first = {
        name
        for names in sessions_of(configurations).values()
        for name in [n for n in names if not _is_end(n, configurations)][: sessions.min]
    }
    return [name for name in configurations if name in first or _is_end(name, configurations)]


def _is_end(name: str, configurations: Mapping[str, Configuration]) -> bool:
    of = configurations[name].session_of
    return of is not None and name == end_name(of)


def measured_configurations(configurations: Mapping[str, Configuration]) -> dict[str, Configuration]:
    """The configurations a table has rows for: every one that is not a further session of another."""
    return {name: c for name, c in configurations.items() if c.session_of is None}


def merged_runs(configurations: Mapping[str, Configuration], runs: Mapping[str, list[Any]]) -> dict[str, list[Any]]:
    """Runs of every session of a configuration under the configuration's name (for the tables that pool
    runs: cost model, effects, categories); keyed by ``measured_configurations``."""
    return {
        name: [run for session in names for run in runs.get(session, [])]
        for name, names in sessions_of(configurations).items()
    }


def configurations_for(config: dict[str, Any], identities: Iterable[dict[str, Any]]) -> dict[str, Configuration]:
    """A job's configurations, from the identities in its params (``Configuration.identity()``): only the
    ``configurations`` entries they come from are expanded, so a job of a 1,000-point sweep does not
    expand the other 999. Values are the config's own, not the params' fingerprints."""
    wanted = {identity["name"]: identity["group"] for identity in identities}
    check_engines(config)
    expanded: dict[str, Configuration] = {}
    for group in dict.fromkeys(wanted.values()):
        expanded.update(expand_entry(config, group))
    expanded = with_sessions(expanded, session_range(config["benchmark"]).max)
    if any(name not in expanded for name in wanted):  # a confirmation session (analyse/confirm.py)
        expanded.update(confirmations_of(expanded, config["benchmark"].get("confirm_sessions", 0)))
    baseline = next((c for c in expanded.values() if c.baseline), None)
    if baseline is not None and end_name(baseline.name) in wanted:
        expanded[end_name(baseline.name)] = end_session(baseline)
    return {name: expanded[name] for name in wanted}


def configuration_for(config: dict[str, Any], identity: dict[str, Any]) -> Configuration:
    """The one configuration a bench or plan job measures or plans."""
    return configurations_for(config, [identity])[identity["name"]]


def end_session(baseline: Configuration) -> Configuration:
    return dataclasses.replace(
        baseline,
        name=end_name(baseline.name),
        baseline=False,
        baseline_factors=[],
        compared_with=baseline.name,
        session_of=baseline.name,
        description=f"{baseline.name} measured again after every other configuration (benchmark.order: bracket)",
    )


def with_end_baseline(configurations: dict[str, Configuration], order: str) -> dict[str, Configuration]:
    """For ``order: bracket``, add ``<baseline>-end``: the baseline again, measured last."""
    if order not in ORDERS:
        raise ConfigError(f"benchmark/order: {order!r}; use one of {', '.join(ORDERS)}")
    if order != "bracket":
        return configurations
    baseline = next(c for c in configurations.values() if c.baseline)
    name = end_name(baseline.name)
    if name in configurations:
        raise ConfigError(f"benchmark/order: bracket adds a configuration '{name}', which already exists; rename it")
    return {**configurations, name: end_session(baseline)}


def runs_before(name: str, configurations: dict[str, Configuration], runs: Sequence[int]) -> list[str]:
    """Inputs that order ``<baseline>-end`` after every other configuration; nothing for the others."""
    baseline = next(c for c in configurations.values() if c.baseline)
    if name != end_name(baseline.name) or configurations[name].baseline:
        return []
    return [run_file(other, i) for other in configurations if other != name for i in runs]


def order_seed(configurations: Mapping[str, Configuration]) -> int:
    """The seed of the sessions' order: a hash of every configuration's name and parameters (``identity``,
    secrets as fingerprints), so that the order is rebuilt from the config alone and differs between sweeps."""
    content = json.dumps(
        {name: c.identity() for name, c in measured_configurations(configurations).items()}, sort_keys=True
    )
    return int.from_bytes(hashlib.sha256(content.encode()).digest()[:8], "big")


def session_order(configurations: Mapping[str, Configuration]) -> list[str]:
    """Every session in the order it is measured (see the module doc); ``<baseline>-end`` is left out
    (its inputs order it last)."""
    sessions = sessions_of(configurations)
    baseline = next((name for name, c in configurations.items() if c.baseline), None)
    bracketed = baseline is not None and end_name(baseline) in configurations
    rounds = max((len([s for s in names if not s.endswith(END_SUFFIX)]) for names in sessions.values()), default=0)
    order: list[str] = []
    seed = order_seed(configurations)
    for round_index in range(rounds):
        names = list(sessions)
        random.Random(seed + round_index).shuffle(names)
        if bracketed and round_index == 0:  # the bracket's first side: the baseline opens the sweep
            names = [baseline, *(n for n in names if n != baseline)]
        order += [
            session_name(name, round_index + 1)
            for name in names
            if session_name(name, round_index + 1) in configurations
        ]
    return order


def session_priorities(configurations: Mapping[str, Configuration]) -> dict[str, int]:
    """Scheduling priority of every session: the earlier in ``session_order``, the higher (0 for
    ``<baseline>-end``, which its inputs order)."""
    order = session_order(configurations)
    return {name: len(order) - order.index(name) if name in order else 0 for name in configurations}
