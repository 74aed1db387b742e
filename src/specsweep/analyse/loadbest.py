"""The setting per load level: at each level the best configuration, the ones equivalent
to it within ``benchmark.equivalence_pct``, or "not resolved"; load.csv's ``level_verdict``.

Every pair of configurations at a level is compared on their paired sessions (session k with session k, as
load.csv's speedups are): the mean log ratio with a Student-t interval, Bonferroni over the level's pairs,
so a level's statements hold together with 95 % confidence. A configuration is *slower* when another's
interval against it lies wholly above 1. Under that coverage the truly best is never called slower, so it
is among the rest, the candidates. A candidate is *equivalent* when its interval against every other
candidate lies above -tolerance: it is then within the tolerance of whichever candidate is truly best
(an equivalence test, an interval inside the margin; "not significant" is not equivalence). A level is
resolved when its candidates are all equivalent (or there is one): the best named is the fastest of
them. Otherwise its candidates are "not resolved". Windows of one launch judge nothing across launches,
as load.csv's Holm verdicts. Nothing is said of a level that was not measured.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from specsweep.maths import stats

if TYPE_CHECKING:
    import pandas as pd

BEST, EQUIVALENT, SLOWER, OPEN, NOT_JUDGED = "best", "equivalent", "slower", "not resolved", "not judged (one launch)"
COLUMNS = {
    "level_verdict": "at this load level: best (the fastest of the configurations no other is shown faster than, "
    "when all of those are equivalent), equivalent (within ±benchmark.equivalence_pct of the best, shown by "
    "simultaneous 95 % intervals over the level's pairs), slower (another is shown faster), not resolved (neither "
    "shown slower nor shown equivalent: more sessions), or not judged (one launch)",
    "equivalence_pct": "benchmark.equivalence_pct: the tolerance level_verdict's equivalence is within",
}

Rates = Mapping[Hashable, float]  # a configuration's replicate rates at one level, keyed for pairing


def _interval(x: Rates, y: Rates, confidence: float) -> tuple[float, float]:
    """Interval of the mean log(x / y) over the replicates both have (NaN with fewer than 2)."""
    logs = np.array([math.log(x[k] / y[k]) for k in sorted(x.keys() & y.keys(), key=str) if x[k] > 0 and y[k] > 0])
    if logs.size < 2:
        return math.nan, math.nan
    half = stats.t_critical(logs.size - 1, confidence) * float(logs.std(ddof=1)) / math.sqrt(logs.size)
    return float(logs.mean()) - half, float(logs.mean()) + half


def level_verdicts(rates: Mapping[str, Rates], tolerance_pct: float) -> dict[str, str]:
    """Each configuration's verdict at one level (see the module doc)."""
    names = [name for name, found in rates.items() if found]
    if len(names) < 2:
        return dict.fromkeys(names, NOT_JUDGED)
    confidence = stats.simultaneous_confidence(len(names) * (len(names) - 1) // 2)
    bounds = {(a, b): _interval(rates[a], rates[b], confidence) for a in names for b in names if a != b}
    if any(math.isnan(low) for low, _ in bounds.values()):
        return dict.fromkeys(names, NOT_JUDGED)
    slower = {a for a in names if any(bounds[(a, b)][1] < 0 for b in names if b != a)}
    candidates = [a for a in names if a not in slower]
    margin = -math.log1p(tolerance_pct / 100)
    resolved = all(bounds[(a, b)][0] > margin for a in candidates for b in candidates if a != b)
    leader = max(candidates, key=lambda a: float(np.mean(np.log(list(rates[a].values())))))
    found = dict.fromkeys(slower, SLOWER)
    if not resolved:
        return found | dict.fromkeys(candidates, OPEN)
    return found | dict.fromkeys(candidates, EQUIVALENT) | {leader: BEST}


def with_verdicts(frame: pd.DataFrame, rates: Mapping[str, Mapping[str, Rates]], tolerance_pct: float) -> pd.DataFrame:
    """load.csv with COLUMNS: ``rates`` per level label, per configuration, its replicates' rates (sessions;
    a level with a row of windows of one launch is not judged)."""
    launches = frame.groupby("load")["replicate"].agg(lambda r: (r == "session").all())
    found = {
        label: level_verdicts(by_name, tolerance_pct) if launches.get(label, False) else {}
        for label, by_name in rates.items()
    }
    frame = frame.copy()
    frame["level_verdict"] = [
        found[label].get(name, NOT_JUDGED) for label, name in zip(frame["load"], frame["configuration"], strict=True)
    ]
    frame["equivalence_pct"] = tolerance_pct
    return frame


def lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per load level of load.csv's rows: its best and the equivalent ones, or what is not resolved."""
    levels: dict[str, dict[str, list[str]]] = {}
    tolerance = ""
    for row in rows:
        if row.get("level_verdict"):
            levels.setdefault(str(row["load"]), {}).setdefault(str(row["level_verdict"]), []).append(
                row["configuration"]
            )
            tolerance = f"{float(row['equivalence_pct']):g}"
    out = []
    for label, by in levels.items():
        if BEST in by:
            same = f" (equivalent within ±{tolerance} %: {', '.join(by[EQUIVALENT])})" if EQUIVALENT in by else ""
            out.append(f"{label}: best {by[BEST][0]}{same}")
        elif OPEN in by:
            out.append(f"{label}: not resolved between {', '.join(by[OPEN])} (more sessions)")
        else:
            out.append(f"{label}: not judged (one launch: benchmark.sessions >= 2)")
    return out


def conclusion_lines(load_csv: str | Path) -> list[str]:
    """The conclusion's line of the setting per load level, from load.csv (read without pandas: the conclusion
    runs in Snakemake's own process)."""
    with open(load_csv, newline="") as handle:
        found = lines(list(csv.DictReader(handle)))
    return [f"  setting per load level: {'; '.join(found)}"] if found else []
