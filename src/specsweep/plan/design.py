"""The sweep's design: which configurations are measured, and in which order.

``benchmark.order: bracket`` measures the baseline first (a Snakemake priority, so no configuration
depends on it) and again as the last session, ``<baseline>-end``, ordered after every other
configuration through its inputs; ``drift`` then compares the two. ``configurations_for`` is the one
way a job gets its configurations (with real values; Snakemake params hold fingerprints of secrets).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from specsweep.plan.config import ConfigError, Configuration, check_engines, expand, expand_entry
from specsweep.record.results import run_file

ORDERS = ("sequential", "bracket")
END_SUFFIX = "-end"


def end_name(baseline: str) -> str:
    return baseline + END_SUFFIX


def configurations_of(config: dict[str, Any]) -> dict[str, Configuration]:
    """Every configuration of a validated config: grids expanded and, for ``benchmark.order: bracket``,
    the ``<baseline>-end`` session added. What the workflow plans."""
    return with_end_baseline(expand(config), config["benchmark"]["order"])


def configurations_for(config: dict[str, Any], identities: Iterable[dict[str, Any]]) -> dict[str, Configuration]:
    """A job's configurations, from the identities in its params (``Configuration.identity()``): only the
    ``configurations`` entries they come from are expanded, so a job of a 1,000-point sweep does not
    expand the other 999. Values are the config's own, not the params' fingerprints."""
    wanted = {identity["name"]: identity["group"] for identity in identities}
    check_engines(config)
    expanded: dict[str, Configuration] = {}
    for group in dict.fromkeys(wanted.values()):
        expanded.update(expand_entry(config, group))
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


def session_priority(name: str, configurations: dict[str, Configuration]) -> int:
    """Scheduling priority of a session: the baseline first (the start of a bracket), then the rest."""
    return 1 if configurations[name].baseline else 0
