"""results/slo_rate.csv: the SLO rate search's found rate per configuration (docs/load.md, "SLO rate search").

Each session's search (results/<session>/load/rate_search.json) is one replicate: the table gives the mean
found rate over a configuration's sessions with a Student-t 95 % interval, and its ratio to the baseline's
(session k with the baseline's session k, the geometric mean of the ratios with its interval on the log
scale, as load.csv's speedup). One session gives no interval, and the table says so. A session whose probe
at ``low`` already missed has no rate (below the range); one whose every probe passed sits at the ceiling.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from specsweep.analyse.loadsummary import paired_speedup
from specsweep.maths import stats
from specsweep.record.configuration import Configuration
from specsweep.record.results import RateSearchRecord

COLUMNS = {
    "configuration": "the configuration (its sessions pooled)",
    "baseline": "true for the baseline",
    "sessions": "sessions whose rate search was read (the replicates)",
    "slo_rate_mean": "mean over the sessions of the highest probed request rate that met every percentile "
    "objective of benchmark.load.slo (requests/s); empty when a session found none",
    "slo_rate_ci95_low": "Student-t 95 % interval over the sessions (empty with one session)",
    "slo_rate_ci95_high": "",
    "resolution": "the search's step: each session's boundary lies within this above its found rate (requests/s)",
    "vs_baseline": "geometric mean of the per-session ratios found rate / the baseline's (session k with k)",
    "vs_baseline_ci95_low": "its 95 % interval on the log scale (empty with one session)",
    "vs_baseline_ci95_high": "",
    "note": "one session (no interval), sessions below the range or at its ceiling",
}


def _interval(rates: list[float]) -> tuple[float, float]:
    if len(rates) < 2:
        return math.nan, math.nan
    half = stats.t_critical(len(rates) - 1) * float(np.std(rates, ddof=1)) / math.sqrt(len(rates))
    return float(np.mean(rates)) - half, float(np.mean(rates)) + half


def _note(records: list[RateSearchRecord]) -> str:
    notes = [] if len(records) > 1 else ["one session: no interval"]
    if len(records) > 1 and len({r.found_rate for r in records}) == 1:  # bisection's grid: a zero-width interval
        notes.append(f"every session found the same rate: its uncertainty is the search step {records[0].resolution:g}")
    if below := sum(r.found_rate is None for r in records):
        notes.append(f"below low {records[0].low:g} in {below} of {len(records)} session(s)")
    if ceiling := sum(r.at_ceiling for r in records):
        notes.append(f"at the ceiling in {ceiling} of {len(records)} session(s): raise high above {records[0].high:g}")
    return "; ".join(notes)


def slo_rate_table(
    configurations: Mapping[str, Configuration], searches: Mapping[str, RateSearchRecord]
) -> pd.DataFrame:
    """One row per configuration (see COLUMNS); ``configurations`` with their further sessions, ``searches``
    by session."""
    from specsweep.plan import design

    sessions = design.sessions_of(configurations)
    measured = design.measured_configurations(configurations)
    found = {
        name: {k: searches[s].found_rate for k, s in enumerate(names) if s in searches}
        for name, names in sessions.items()
    }
    baseline = next(c.name for c in measured.values() if c.baseline)
    rows = []
    for name, configuration in measured.items():
        records = [searches[s] for s in sessions[name] if s in searches]
        if not records:
            continue
        rates = [r for r in found[name].values() if r is not None]
        complete = len(rates) == len(records)
        low, high = _interval(rates) if complete else (math.nan, math.nan)
        ratio = paired_speedup(
            {k: r for k, r in found[name].items() if r is not None},
            {k: r for k, r in found[baseline].items() if r is not None},
        )
        rows.append(
            {
                "configuration": name,
                "baseline": configuration.baseline,
                "sessions": len(records),
                "slo_rate_mean": float(np.mean(rates)) if complete else math.nan,
                "slo_rate_ci95_low": low,
                "slo_rate_ci95_high": high,
                "resolution": records[0].resolution,
                "vs_baseline": math.nan if configuration.baseline else ratio.ratio,
                "vs_baseline_ci95_low": math.nan if configuration.baseline else ratio.low,
                "vs_baseline_ci95_high": math.nan if configuration.baseline else ratio.high,
                "note": _note(records),
            }
        )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def comparison_lines(table: pd.DataFrame) -> list[str]:
    """'ngram raises the SLO rate from 2.0 to 3.5 requests/s (x1.75, 95 % CI 1.5-2.0)', per configuration."""
    base = table[table["baseline"]]
    if base.empty or math.isnan(base["slo_rate_mean"].iloc[0]):
        return []
    reference = base["slo_rate_mean"].iloc[0]
    lines = []
    for row in table[~table["baseline"]].itertuples():
        if math.isnan(row.slo_rate_mean):
            continue
        verb = "raises" if row.slo_rate_mean > reference else "lowers" if row.slo_rate_mean < reference else "keeps"
        interval = (
            f"95 % CI {row.vs_baseline_ci95_low:.2f}-{row.vs_baseline_ci95_high:.2f}"
            if not math.isnan(row.vs_baseline_ci95_low)
            else "one session: no interval"
        )
        # a rate at the ceiling is a lower bound: the comparison says so rather than call it equal
        ceiling = " (at the search's ceiling: raise high)" if "ceiling" in f"{row.note} {base['note'].iloc[0]}" else ""
        lines.append(
            f"{row.configuration} {verb} the SLO rate from {reference:.3g} to {row.slo_rate_mean:.3g} requests/s "
            f"(x{row.vs_baseline:.2f}, {interval}; search step {row.resolution:.3g}){ceiling}"
        )
    return lines


def write(
    configurations: Mapping[str, Configuration],
    searches: Mapping[str, RateSearchRecord],
    output: str,
    progress: TextIO,
) -> None:
    """The load_tables job's slo_rate.csv, and its comparison lines on the console."""
    from specsweep.analyse.aggregate import write_csv

    table = slo_rate_table(configurations, searches)
    write_csv(table, Path(output))
    print(table.to_string(index=False), file=progress)
    for line in comparison_lines(table):
        print(line, file=progress)
