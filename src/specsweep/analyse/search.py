"""The next value worth measuring of the one speculative flag a sweep varies (analyse/schedule.py
``swept_flag``): from the measured values' throughput, the values between the best and its measured
neighbours, until both neighbours are measured; then the next step is to confirm the winner in fresh sessions.

The throughput of speculative decoding against its draft length has one interior optimum (each draft token
costs verify time, and is accepted less often than the one before: analyse/costmodel.py), so the best's
neighbours bracket it and the search narrows that bracket. In a gap wider than one step the value proposed is
the cost model's predicted optimum when it lies inside the gap, else the middle rounded towards the best
(steps 3 between a winning 2 and a losing 5). A best that is the largest value measured is doubled: the curve
may still rise. The baseline (no speculation) is value 0, the lowest there is. The proposal follows the point
estimates; whether the best is *shown* best is the verdicts' matter (analyse/loadbest.py, summary.csv).

Each level searches on its own rates (single request: summary.csv's decode rate; each load level: load.csv's
steady output rate), since the best draft length falls as the load rises; the next round measures the union
of their proposals, written as a config fragment (``fragment``) for ``--configfile``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from specsweep.analyse import costmodel
from specsweep.analyse.schedule import number, swept_flag
from specsweep.plan.config_errors import user_command
from specsweep.record.atomic import atomic_write
from specsweep.record.configuration import Configuration

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_CONFIG = "config/config.yaml"  # the Snakefile's own, which any --configfile replaces
SINGLE_REQUEST = "single request"  # the level of summary.csv's runs, one request at a time
CONFIRM = "confirm the winner: re-measure it and the baseline in fresh sessions"


@dataclass(frozen=True)
class Proposal:
    """The best measured value, the values to measure next (none: its neighbours are measured) and why."""

    best: int
    next_values: tuple[int, ...]
    why: str


def propose(rates: Mapping[int, float], predicted: float | None = None) -> Proposal:
    """The next values from ``rates`` (swept value -> throughput, any scale where higher is better) and the
    cost model's predicted optimum in the flag's units, if any."""
    if not rates:
        raise ValueError("no measured value to search from")
    measured = sorted(rates)
    best = max(measured, key=lambda value: rates[value])
    below = [v for v in measured if v < best]
    above = [v for v in measured if v > best]
    proposed: list[int] = []
    reasons: list[str] = []
    low = below[-1] if below else 0  # 0, no speculation: the baseline every sweep has
    if best - low > 1:
        proposed.append(_inside(low, best, predicted, towards=best))
        reasons.append(f"between {low} and the best {best}")
    if above and above[0] - best > 1:
        proposed.append(_inside(best, above[0], predicted, towards=best))
        reasons.append(f"between the best {best} and {above[0]}")
    elif not above:
        proposed.append(max(2 * best, best + 1))
        reasons.append(f"above the best {best}, the largest measured (the curve may still rise)")
    if not proposed:
        return Proposal(best, (), f"the best {best}'s neighbours are measured")
    return Proposal(best, tuple(sorted(set(proposed))), "; ".join(reasons))


def _inside(low: int, high: int, predicted: float | None, towards: int) -> int:
    """A value strictly between low and high: the predicted optimum there, else the middle nearer ``towards``."""
    if predicted is not None and math.isfinite(predicted) and low < predicted < high:
        return min(max(round(predicted), low + 1), high - 1)
    middle = (low + high) / 2
    value = math.floor(middle) if towards < middle else math.ceil(middle)
    return min(max(value, low + 1), high - 1)


def next_values(proposals: Iterable[Proposal]) -> list[int]:
    """What one more round measures: every proposal's values (per load level, say), once."""
    return sorted({value for p in proposals for value in p.next_values})


def measured_values(
    rates: Mapping[str, float], configurations: Mapping[str, Configuration], flag: str
) -> dict[int, tuple[str, float]]:
    """Per value of ``flag``, the fastest configuration setting it and its rate (``rates`` by configuration
    name); the baseline is value 0."""
    found: dict[int, tuple[str, float]] = {}
    for name, rate in rates.items():
        configuration = configurations.get(name)
        if configuration is None or not math.isfinite(rate):
            continue
        value = 0.0 if configuration.baseline else number({**configuration.args, **configuration.axes}.get(flag))
        if value is None or value != int(value):
            continue
        if int(value) not in found or rate > found[int(value)][1]:
            found[int(value)] = (name, rate)
    return found


def level_rates(summary: pd.DataFrame, load: pd.DataFrame | None) -> dict[str, dict[str, float]]:
    """The rates each level's search follows: summary.csv's single-request decode rate, and load.csv's steady
    output rate at each load level."""
    levels = {
        SINGLE_REQUEST: dict(zip(summary["configuration"], summary["decode_tok_s_mean"].astype(float), strict=True))
    }
    for label, rows in load.groupby("load", sort=False) if load is not None else []:
        levels[str(label)] = dict(zip(rows["configuration"], rows["output_tok_s_mean"].astype(float), strict=True))
    return levels


def _predicted(model: costmodel.CostModel | None, flag: str, group: str) -> float | None:
    """The cost model's optimum in the flag's units, from the group the best belongs to."""
    groups = [g for g in (model.groups if model else []) if g.axis == flag and g.name == group]
    return costmodel.optimum_value(groups[0]) if groups else None


def fragment(
    entries: Mapping[str, Any], configurations: Mapping[str, Configuration], flag: str, values: Iterable[int]
) -> dict[str, Any]:
    """The next round as a config fragment Snakemake merges into the sweep's config (``--configfile`` after the
    sweep's own): where the flag is a grid axis, the grid's list with the new values; else one entry per value,
    a copy of the entry of the configuration that sets the flag."""
    setting = [c for c in configurations.values() if not c.baseline and flag in {**c.args, **c.axes}]
    if not setting or not (values := sorted(values)):
        return {}
    entry_name = setting[0].group or setting[0].name
    entry = entries[entry_name]
    if "factors" in entry:
        raise ValueError(f"configurations/{entry_name}: the search extends grids and plain entries, not factors")
    key, axis = ("env", flag.removeprefix("env:")) if flag.startswith("env:") else ("args", flag)
    grid_axis = entry.get("grid", {}).get(key, {}).get(axis)
    if grid_axis is not None:
        listed = grid_axis if isinstance(grid_axis, list) else [grid_axis]
        return {"configurations": {entry_name: {"grid": {key: {axis: sorted({*listed, *values})}}}}}
    stem = axis.lstrip("-").lower().replace("_", "-")
    return {
        "configurations": {
            f"{entry_name}-{stem}{value}": {
                **entry,
                key: {**entry.get(key, {}), axis: value},
                "description": f"{entry.get('description', entry_name)}; {axis} = {value} (search)",
            }
            for value in values
        }
    }


def found(
    levels: Mapping[str, Mapping[str, float]],
    configurations: Mapping[str, Configuration],
    model: costmodel.CostModel | None,
) -> dict[str, Any]:
    """next_values.json: per level its measured values, best, next values and why; their union and why (every
    file has a top-level ``why``: the reasons of the levels that propose values, else what to do next)."""
    flag = swept_flag(configurations)
    if flag is None:
        return {"flag": None, "next_values": [], "why": "the sweep varies no one speculative flag"}
    per_level, proposals = {}, []
    for label, rates in levels.items():
        measured = measured_values(rates, configurations, flag)
        if len(measured) < 2:
            continue
        best_name = measured[max(measured, key=lambda v: measured[v][1])][0]
        # the cost model is fitted on single-request runs: its optimum is that level's
        predicted = _predicted(model, flag, configurations[best_name].group) if label == SINGLE_REQUEST else None
        proposal = propose({value: rate for value, (_, rate) in measured.items()}, predicted)
        proposals.append(proposal)
        per_level[label] = {
            "measured": {str(v): {"configuration": n, "rate": r} for v, (n, r) in sorted(measured.items())},
            "best": proposal.best,
            "predicted_optimum": predicted,
            "next_values": list(proposal.next_values),
            "why": proposal.why,
        }
    if not per_level:
        return {"flag": flag, "next_values": [], "why": f"fewer than two values of {flag} measured"}
    values = next_values(proposals)  # as benchmarks/choose.py's search: the one union
    why = "; ".join(f"{label}: {level['why']}" for label, level in per_level.items() if level["next_values"])
    return {"flag": flag, "levels": per_level, "next_values": values, "why": why or CONFIRM}


def write(
    levels: Mapping[str, Mapping[str, float]],
    configurations: Mapping[str, Configuration],
    entries: Mapping[str, Any],
    model: costmodel.CostModel | None,
    json_path: str | Path,
    fragment_path: str | Path,
    config_files: Sequence[str] = (),
) -> list[str]:
    """results/next_values.json and the next round's config fragment; the lines the search job prints (its
    command with the sweep's own ``config_files``)."""
    search = found(levels, configurations, model)
    try:
        next_round = fragment(entries, configurations, search["flag"], search["next_values"]) if search["flag"] else {}
    except ValueError as reason:  # a flag set by factors: the values stand, the user writes the round
        next_round, search["why_no_round"] = {}, str(reason)
    search["next_round"] = str(fragment_path) if next_round else None
    atomic_write(json_path, json.dumps(search, indent=1) + "\n")
    header = "# the search's next round (analyse/search.py): pass it after the sweep's own --configfile\n"
    atomic_write(fragment_path, header + yaml.safe_dump(next_round, sort_keys=False))
    return lines(search, config_files)


def lines(search: Mapping[str, Any], config_files: Sequence[str] = ()) -> list[str]:
    """What the search found; the command that measures the next round carries ``config_files`` (the sweep's
    --configfile values; the default sweep's file when none: any --configfile replaces it)."""
    if "levels" not in search:
        return [f"next values worth measuring: none ({search['why']})"]
    # the fastest measured, not "the best": the search reads rates, the verdicts are the summary's
    fastest = ", ".join(f"{label} {level['best']}" for label, level in search["levels"].items())
    if not search["next_values"]:
        return [f"search ({search['flag']}; fastest measured at {fastest}): every neighbour is measured: {CONFIRM}"]
    values = ", ".join(str(v) for v in search["next_values"])
    found = f"next values worth measuring ({search['flag']}; fastest measured at {fastest}): {values} ({search['why']})"
    if search["next_round"] is None:
        return [found, f"  no next round written: {search.get('why_no_round')}"]
    command = user_command("--cores 1", [*(config_files or [DEFAULT_CONFIG]), search["next_round"]])
    return [found, f"  next round: {command}"]


def conclusion_lines(path: str | Path, config_files: Sequence[str] = ()) -> list[str]:
    """The conclusion's lines, from the file (the conclusion runs in Snakemake's own process)."""
    search = json.loads(Path(path).read_text())
    return [f"  {line}" for line in lines(search, config_files)] if "levels" in search else []
