"""Before measuring: the smallest speedup the planned design detects (maths/power.py), from the session
noise of an earlier sweep of the same engine in the results tree, else ``benchmark.assumed_session_cv_pct``.

The noise is the sessions' spread: summary.csv's ``decode_tok_s_between_session_cv`` (the standard deviation
of a configuration's log session rates), pooled over the earlier sweep's rows of these engines with
``sessions - 1`` degrees of freedom each, as the summary pools it. It carries that sweep's runs per session;
a design with other runs per session has a somewhat different session noise. Rows measured under contention
(``contended_runs``) are left out: another process's load is no launch-to-launch noise of the engine (one
contended sweep on this project's 2-core VM had a session spread of 184 %).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specsweep.maths import power
from specsweep.plan import design
from specsweep.plan.config import Configuration
from specsweep.plan.factors import baselines_by_configuration


@dataclass(frozen=True)
class Noise:
    sd: float  # of a session's log rate
    source: str


def earlier_noise(summary_csv: str | Path, engines: set[str]) -> Noise | None:
    """The pooled between-session spread of ``engines``' rows of an earlier summary.csv; None without one."""
    try:
        with open(summary_csv, newline="") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, csv.Error):
        return None
    squares = df = 0.0
    contended = 0
    for row in rows:
        try:
            cv, sessions = float(row.get("decode_tok_s_between_session_cv") or "nan"), int(row.get("sessions") or 0)
        except ValueError:
            continue
        if row.get("engine") not in engines or math.isnan(cv) or sessions < 2:
            continue
        if float(row.get("contended_runs") or 0) > 0:
            contended += 1
        else:
            squares += (sessions - 1) * cv**2
            df += sessions - 1
    if not df:
        return None
    left_out = f", {contended} contended row(s) left out" if contended else ""
    return Noise(
        math.sqrt(squares / df), f"measured: {summary_csv}, engine {', '.join(sorted(engines))}, {df:.0f} df{left_out}"
    )


def lines(
    configurations: Mapping[str, Configuration], benchmark: Mapping[str, Any], summary_csv: str | Path
) -> list[str]:
    """What the plan prints and commands.sh keeps: per baseline, the smallest detectable speedup at 80 % power
    after the family's correction, and the sessions per configuration that ``benchmark.detect_pct`` needs."""
    sessions = design.sessions_of(configurations)
    measured = design.measured_configurations(configurations)
    families: dict[str, list[str]] = {}
    for name, against in baselines_by_configuration(measured).items():
        if against is not None:
            families.setdefault(against, []).append(name)
    if not families:
        return []
    engines = {c.engine for c in measured.values()}
    noise = earlier_noise(summary_csv, engines)
    assumed = benchmark.get("assumed_session_cv_pct")
    if noise is None and assumed is None:
        return [
            f"Detectable speedup: no earlier sweep of {', '.join(sorted(engines))} in {summary_csv} with 2 sessions; "
            f"state the session noise as benchmark.assumed_session_cv_pct"
        ]
    noise = noise or Noise(assumed / 100, "assumed: benchmark.assumed_session_cv_pct")
    df = sum(len(sessions[name]) - 1 for name in measured)
    out = [
        f"Detectable speedup (80 % power, two-sided t-test at 0.05 / comparisons, Holm's first step; session "
        f"noise {100 * noise.sd:.1f} %, {noise.source}):"
    ]
    if not df:
        return [
            *out,
            "  one session per configuration: launch-to-launch noise is not estimated (benchmark.sessions >= 2)",
        ]
    target = benchmark.get("detect_pct")
    for baseline, members in families.items():
        candidate = min(len(sessions[name]) for name in members)
        found = power.detectable_pct(noise.sd, candidate, len(sessions[baseline]), df, len(members))
        text = (
            f"  against {baseline} ({len(members)} comparisons, {candidate} sessions each, df {df}): differences "
            f"below ±{found:.1f} % cannot be told apart by this sweep"
        )
        if target is not None:
            needed = power.sessions_needed(target, noise.sd, len(measured), len(members))
            text += f"; ±{target:g} % (benchmark.detect_pct) needs {_sessions(needed)}"
        out.append(text)
    return out


def _sessions(needed: int | None) -> str:
    return "more than 100 sessions per configuration" if needed is None else f"{needed} sessions per configuration"
