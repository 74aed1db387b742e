"""How `make test` spreads the suite over pytest-xdist workers (its phase 2, `-n 4`: this module's scheduler).

A unit of work goes to one worker whole:
- a test module, so that its module-scoped sweep is made once, not once per worker;
- the modules that share a costly session fixture (the fault suite's stand-in `sweep`), for the same
  reason (``SHARED_SESSION_FIXTURE``; a collection that would split such a fixture is refused by name);
- each Slurm lane: the cluster tests of one set of simulated nodes, run in order, since a measuring
  job owns its node (``SLURM_LANES``, which must name every cluster module; tests/slurm/cluster.sh
  makes the nodes).

Units are handed out in the order the workers collected them, and tests/conftest.py orders the
collection longest kind first, so that no long unit starts last: the cluster tests (mostly waiting on
Slurm), then modules with real-engine sweeps, then the fault suite's workflows, then the unit tests.

(xdist's own `--dist loadgroup` would say this with marks, but on pytest 9.2 its groups are silently
lost: pytest-dev/pytest-xdist#1386.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# The modules that use tests/faults/conftest.py's session-scoped `sweep`.
SHARED_SESSION_FIXTURE = (
    "faults/test_faults_data.py",
    "faults/test_faults_security.py",
    "faults/test_faults_snakemake.py",
)
# Session fixtures that every worker may make for itself: cheap, or cached on disk across processes.
WORKER_LOCAL = frozenset({"example_campaign", "real_engine", "slurm_cluster"})
# Slurm lanes, each on nodes of its own: the host (partition `debug`), and node1 + node2 (`pair`).
SLURM_LANES = {
    "slurm/test_slurm_faults.py": "slurm-debug",
    "slurm/test_slurm_sweep.py": "slurm-debug",
    "slurm/test_two_nodes.py": "slurm-pair",
    "slurm/test_node_lock.py": "slurm-pair",
}


def unit_of(nodeid: str) -> str:
    """The unit of work of a test, from its node id ("tests/<module>::<test>")."""
    module = _module(nodeid)
    if module in SHARED_SESSION_FIXTURE:
        return "faults-shared-sweep"
    return SLURM_LANES.get(module, module)


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0].removeprefix("tests/")


def _rank(item: pytest.Item) -> int:
    if item.get_closest_marker("slurm"):
        return 0
    if item.get_closest_marker("engine"):
        return 1
    if TESTS / "faults" in item.path.parents or item.get_closest_marker("workflow"):
        return 2
    return 3


def order(items: list[pytest.Item]) -> None:
    """Orders the collection by unit, the units by rank (a unit takes its best), then by first collected;
    refuses a collection whose shared session fixture would be made in several units."""
    if split := split_fixtures({item.nodeid: _shared_session_fixtures(item) for item in items}):
        raise pytest.UsageError(
            f"tests/schedule.py: a session fixture is shared by tests in different units of work: {'; '.join(split)}; "
            "list their modules in SHARED_SESSION_FIXTURE (or WORKER_LOCAL, if every worker may make it)"
        )
    if laneless := sorted({m for item in items if (m := _module(item.nodeid)).startswith("slurm/")} - set(SLURM_LANES)):
        raise pytest.UsageError(
            f"tests/schedule.py: cluster test modules in no Slurm lane: {', '.join(laneless)}; add each to "
            "SLURM_LANES with the lane whose nodes (partition) its jobs use"
        )
    rank: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        unit = unit_of(item.nodeid)
        rank[unit] = min(rank.get(unit, 3), _rank(item))
        first_seen.setdefault(unit, index)
    items.sort(key=lambda item: (rank[unit_of(item.nodeid)], first_seen[unit_of(item.nodeid)]))


def split_fixtures(uses: dict[str, set[str]]) -> list[str]:
    """The shared session fixtures whose users (node id -> the fixtures it uses) are in more than one unit,
    each with its units: every worker among them would make the fixture again."""
    units: dict[str, set[str]] = {}
    for nodeid, fixtures in uses.items():
        for fixture in fixtures:
            units.setdefault(fixture, set()).add(unit_of(nodeid))
    return [
        f"{fixture} (units {', '.join(sorted(found))})" for fixture, found in sorted(units.items()) if len(found) > 1
    ]


def _shared_session_fixtures(item: pytest.Item) -> set[str]:
    """The session-scoped fixtures of this suite's conftests that the item uses, bar the worker-local ones."""
    shared = set()
    for name, definitions in item._fixtureinfo.name2fixturedefs.items():  # type: ignore[attr-defined]
        defined_in = Path(definitions[-1].func.__code__.co_filename).resolve()
        if definitions[-1].scope == "session" and TESTS in defined_in.parents and name not in WORKER_LOCAL:
            shared.add(f"{defined_in.relative_to(TESTS)}::{name}")
    return shared


def make_scheduler(config: pytest.Config, log):
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False  # keep the collection's order
    return UnitScheduling(config, log)
