"""The speculation setting per batch size, in the form an engine takes: vLLM's dynamic speculation schedule
``speculative_config.num_speculative_tokens_per_batch_size``, a list of ``[start, end, k]`` ranges of batch
sizes (vllm/config/speculative.py; vllm/benchmarks/sweep/tune_speculative_k.py writes one from sweep records).

It is read off load.csv's ``level_verdict`` (analyse/loadbest.py) where the sweep varies one speculative flag
(a grid axis or factor whose values are numbers: vLLM ``--speculative-config.num_speculative_tokens``, SGLang
``--speculative-num-steps``, llama.cpp ``--draft-max``), at the closed-loop levels, whose concurrency is the
batch size the engine sees. A level whose best is not resolved, or is a configuration off the swept flag,
gives no range; the baseline (no speculation) is k = 0. Each measured concurrency covers the batch sizes
above the previous measured one up to itself; none above the highest measured level is covered: a schedule
never extrapolates beyond what was measured.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from specsweep.analyse.loadbest import BEST
from specsweep.plan.load_levels import CONCURRENCY
from specsweep.record.configuration import Configuration

SCHEDULE_KEY = "num_speculative_tokens_per_batch_size"
SOURCE = "vllm/config/speculative.py num_speculative_tokens_per_batch_size: [[start, end, k], ...] batch sizes"


def swept_flag(configurations: Mapping[str, Configuration]) -> str | None:
    """The one speculative flag the sweep varies in numbers, or None (no such flag, or several)."""
    values: dict[str, set[float]] = {}
    for configuration in configurations.values():
        if configuration.baseline:
            continue
        for axis, value in {**configuration.axes, **configuration.args}.items():
            if number(value) is not None:
                values.setdefault(axis, set()).add(float(value))
    swept = [axis for axis, seen in values.items() if len(seen) > 1]
    return swept[0] if len(swept) == 1 else None


def schedule(table: pd.DataFrame, configurations: Mapping[str, Configuration], flag: str) -> dict[str, Any]:
    """The ranges and, per closed-loop level, what chose them (the best and its k, or why none)."""
    levels = table[table["load_kind"] == CONCURRENCY]
    chosen: dict[int, int | None] = {}
    reasons: dict[str, str] = {}
    for value, rows in sorted(levels.groupby("load_value"), key=lambda item: float(item[0])):
        batch, best = int(float(value)), rows[rows["level_verdict"] == BEST]
        label = str(rows["load"].iloc[0])
        if best.empty:
            chosen[batch], reasons[label] = None, "not resolved"
            continue
        name = str(best["configuration"].iloc[0])
        configuration = configurations[name]
        k = 0 if configuration.baseline else number({**configuration.args, **configuration.axes}.get(flag))
        chosen[batch] = int(k) if k is not None else None
        reasons[label] = f"best {name}" + (f" (k = {int(k)})" if k is not None else f": not on {flag}")
    ranges: list[list[int]] = []
    previous: tuple[int, int | None] | None = None
    for batch, k in chosen.items():
        if k is not None:  # from above a resolved lower level; an unresolved one's neighbours are not claimed
            start = previous[0] + 1 if previous is not None and previous[1] is not None else batch
            ranges.append([start, batch, k])
        previous = (batch, k)
    return {"flag": flag, SCHEDULE_KEY: _merged(ranges), "levels": reasons, "form": SOURCE}


def _merged(ranges: list[list[int]]) -> list[list[int]]:
    """Adjacent ranges with the same k as one, as vLLM's schedules are written."""
    merged: list[list[int]] = []
    for start, end, k in ranges:
        if merged and merged[-1][2] == k and merged[-1][1] + 1 == start:
            merged[-1][1] = end
        else:
            merged.append([start, end, k])
    return merged


def write(table: pd.DataFrame, configurations: Mapping[str, Configuration], path: str | Path) -> list[str]:
    """results/speculation_schedule.json, and the lines the load tables job prints of it."""
    flag = swept_flag(configurations)
    if flag is None or "level_verdict" not in table:
        found: dict[str, Any] = {"flag": None, SCHEDULE_KEY: None, "why": "the sweep varies no one speculative flag"}
    else:
        found = schedule(table, configurations, flag)
    Path(path).write_text(json.dumps(found, indent=1) + "\n")
    return lines(found)


def lines(found: Mapping[str, Any]) -> list[str]:
    if not found.get(SCHEDULE_KEY):
        why = found.get("why") or "no closed-loop level resolved its best"
        return [f"speculation schedule: none ({why})"]
    return [f"speculation schedule ({found['flag']}, vLLM's {SCHEDULE_KEY}): {json.dumps(found[SCHEDULE_KEY])}"]


def conclusion_lines(path: str | Path) -> list[str]:
    """The conclusion's line, from the file (the conclusion runs in Snakemake's own process)."""
    found = json.loads(Path(path).read_text())
    return [f"  {line}" for line in lines(found)] if found.get(SCHEDULE_KEY) else []


def number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
