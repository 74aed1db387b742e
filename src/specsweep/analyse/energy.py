"""What a token costs, and what else used the machine: energy, clocks and contention of each run and window
(their ``telemetry``, measure/telemetry.py) as columns of runs.csv, summary.csv and load.csv.

Intervals are over the same units as the throughput's beside them: in summary.csv the session (each
session's mean tokens/J and J/token; geometric mean over sessions, 95 % t-interval on the log scale with the
spread pooled over the configurations, as analyse/replicates.py; with one session, no interval, said in the
warnings), windows in load.csv (95 % Student-t). Where energy is not measured (no GPU visible, no readable
RAPL counter, an older record) ``energy_source`` says so in words and the numeric columns are empty.
Column meanings: docs/energy.md.

``python -m specsweep.analyse.energy [results]`` prints, per run and window, how far integrated GPU power is
from the GPU's energy counter (the 2 % check of docs/energy.md) and exits 1 when any differ by more.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from specsweep.analyse import replicates
from specsweep.maths import stats
from specsweep.measure import machine, telemetry
from specsweep.measure.rate_check import kept_and_excluded
from specsweep.record import results
from specsweep.record.results import Launch, Run, Window

ONE_SESSION_NOTE = "energy: one session: no interval for tokens/J (launch-to-launch variation not measured)"
AGREEMENT_LIMIT = 0.02  # integrated power and the energy counter must agree within 2 % over each measurement

RUN_COLUMNS: dict[str, str] = {
    "energy_j": "energy used while the run was measured (J; GPUs' energy counter, integrated GPU power, or "
    "the CPU package's RAPL counter: summary.csv energy_source says which); empty when not measured",
    "joules_per_token": "energy_j / tokens",
    "power_w": "energy_j / the sampled time (W)",
    "sm_clock_mhz": "mean SM clock over the run's samples and GPUs (MHz)",
    "clock_slowdowns": "clock slowdowns any sample reported (power cap, thermal, hardware slowdown, power brake)",
    "other_cpu_pct": "CPU time other processes (not the measuring process, the engine, or their children) used "
    "while the run was measured, % of the machine's CPU time",
    "steal_pct": "CPU time the hypervisor stole while the run was measured, % of the machine's",
    "contended": "why the run counts as contended (other processes above 10 % of the CPUs, steal above 5 %, "
    "another process on the engine's GPUs); empty when it does not",
}

_MEASURED = ("energy_j_mean", "joules_per_token_mean", "tokens_per_joule_mean")
SUMMARY_COLUMNS: dict[str, str] = {
    "energy_source": "where energy_j comes from (nvml energy counter, nvml integrated power, rapl (<zones>)), "
    "or 'not measured: <why>' in words",
    "energy_j_mean": "energy per run, mean over runs (J)",
    "joules_per_token_mean": "energy per output token (J): geometric mean over sessions of each session's mean "
    "of energy_j / tokens",
    "joules_per_token_ci95_low": "95 % interval of that mean over sessions, lower bound: exp(mean log ± t·s/√sessions) "
    "with the log spread of the sessions pooled over the configurations (empty with one session)",
    "joules_per_token_ci95_high": "upper bound",
    "tokens_per_joule_mean": "output tokens per joule: geometric mean over sessions of each session's mean of "
    "tokens / energy_j",
    "tokens_per_joule_ci95_low": "95 % interval of that mean over sessions, lower bound (as joules_per_token's; "
    "empty with one session)",
    "tokens_per_joule_ci95_high": "upper bound",
    "power_w_mean": "mean power over runs (W)",
    "sm_clock_mhz_mean": "SM clock, mean over every sample of every run (MHz)",
    "mem_clock_mhz_mean": "memory clock, mean over every sample of every run (MHz)",
    "throttled_runs": "runs during which the clocks slowed down (power cap, thermal, hardware slowdown, "
    "power brake); their names in warnings",
    "contended_runs": "runs measured under contention (runs.csv contended: other processes, CPU steal, other "
    "processes on the engine's GPUs)",
    "other_cpu_pct_max": "the most CPU time other processes used during one run, % of the machine's",
}

LOAD_COLUMNS: dict[str, str] = {
    "energy_source": "where the windows' energy comes from, or 'not measured: <why>' in words",
    "energy_j_mean": "energy per window, mean over windows (J)",
    "joules_per_token_mean": "energy per output token, mean over windows of energy / output tokens (J)",
    "joules_per_token_ci95_low": "95 % Student-t interval of that mean over windows, lower bound",
    "joules_per_token_ci95_high": "upper bound",
    "tokens_per_joule_mean": "output tokens per joule, mean over windows",
    "tokens_per_joule_ci95_low": "95 % Student-t interval of that mean over windows, lower bound",
    "tokens_per_joule_ci95_high": "upper bound",
    "power_w_mean": "mean power over windows (W)",
    "sm_clock_mhz_mean": "SM clock, mean over every sample of every window (MHz)",
    "throttled_windows": "windows during which the clocks slowed down",
    "contended_windows": "windows measured under contention (other processes, CPU steal, the engine's GPUs)",
}


def _pct(contention: dict[str, Any] | None, key: str) -> float | None:
    return (contention or {}).get(key)


def run_columns(run: Run) -> dict[str, Any]:
    """runs.csv's telemetry columns of one run (RUN_COLUMNS)."""
    energy = telemetry.energy_of(run.telemetry)
    contention = (run.telemetry or {}).get("contention")
    return {
        "energy_j": energy.joules,
        "joules_per_token": energy.joules / run.tokens if energy.joules is not None and run.tokens else None,
        "power_w": energy.watts,
        "sm_clock_mhz": telemetry.mean_of(run.telemetry, "sm_mhz"),
        "clock_slowdowns": ", ".join(telemetry.slowdowns(run.telemetry)) or None,
        "other_cpu_pct": _pct(contention, "other_cpu_pct"),
        "steal_pct": _pct(contention, "steal_pct"),
        "contended": telemetry.contended(contention),
    }


def _source(records: Sequence[dict[str, Any] | None]) -> str:
    sources = list(dict.fromkeys(telemetry.energy_of(r).source for r in records))
    return "; ".join(sources) if sources else f"{telemetry.NOT_MEASURED}: nothing measured"


def _per_token(records: Sequence[dict[str, Any] | None], tokens: Sequence[int]) -> dict[str, Any]:
    """Energy, J/token and tokens/J with intervals over the measurements; empty when any is unmeasured
    (a mean over part of the runs would not be the configuration's)."""
    energies = [telemetry.energy_of(r) for r in records]
    if not energies or any(e.joules is None or e.joules <= 0 for e in energies):
        return {}
    joules = [e.joules or 0.0 for e in energies]
    (per_token, _), (per_joule, _) = stats.describe_many(
        [[j / n for j, n in zip(joules, tokens, strict=True)], [n / j for j, n in zip(joules, tokens, strict=True)]]
    )
    return {
        "energy_j_mean": sum(joules) / len(joules),
        "joules_per_token_mean": per_token.mean,
        "joules_per_token_ci95_low": per_token.ci_low,
        "joules_per_token_ci95_high": per_token.ci_high,
        "tokens_per_joule_mean": per_joule.mean,
        "tokens_per_joule_ci95_low": per_joule.ci_low,
        "tokens_per_joule_ci95_high": per_joule.ci_high,
        "power_w_mean": sum(e.watts or 0.0 for e in energies) / len(energies),
    }


def _clock(records: Sequence[dict[str, Any] | None], key: str) -> float | None:
    values = [v for r in records for g in ((r or {}).get("gpus") or {}).values() for v in g.get(key, []) if v]
    return sum(values) / len(values) if values else None


def measurement_columns(records: Sequence[dict[str, Any] | None], tokens: Sequence[int]) -> dict[str, Any]:
    """The energy, clock, throttling and contention columns over a configuration's runs or a level's windows."""
    return {
        "energy_source": _source(records),
        **_per_token(records, tokens),
        "sm_clock_mhz_mean": _clock(records, "sm_mhz"),
        "mem_clock_mhz_mean": _clock(records, "mem_mhz"),
        "throttled": sum(bool(telemetry.slowdowns(r)) for r in records),
        "contended": sum(bool(telemetry.contended((r or {}).get("contention"))) for r in records),
        "other_cpu_pct_max": max(
            (c["other_cpu_pct"] for r in records if (c := (r or {}).get("contention")) is not None), default=None
        ),
    }


# each session's unit of a per-token quantity, from its runs' joules and tokens
PER_TOKEN = {"joules_per_token": lambda j, n: j / n, "tokens_per_joule": lambda j, n: n / j}


def session_intervals(sessions: Mapping[str, Sequence[Sequence[Run]]]) -> dict[str, dict[str, float]]:
    """Per configuration whose every run has energy, PER_TOKEN's columns over sessions (the module doc)."""
    units: dict[str, dict[str, list[float]]] = {}
    for name, found in sessions.items():
        energies = [[(telemetry.energy_of(r.telemetry).joules, r.tokens) for r in runs] for runs in found if runs]
        if energies and all(j is not None and j > 0 for runs in energies for j, _ in runs):
            units[name] = {
                column: [float(np.mean([unit(j, n) for j, n in runs])) for runs in energies]
                for column, unit in PER_TOKEN.items()
            }
    out: dict[str, dict[str, float]] = {name: {} for name in units}
    for column in PER_TOKEN:
        sd, df = replicates.pooled_sd(found[column] for found in units.values())
        t = stats.t_critical(df) if df else math.nan
        for name, found in units.items():
            mean = float(np.mean(np.log(found[column])))
            half = t * sd / math.sqrt(len(found[column]))
            out[name] |= {
                f"{column}_mean": math.exp(mean),
                f"{column}_ci95_low": math.exp(mean - half),
                f"{column}_ci95_high": math.exp(mean + half),
            }
    return out


def summary_columns(
    frame: pd.DataFrame, sessions: Mapping[str, Sequence[Sequence[Run]]], launches: dict[str, Launch]
) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """summary.csv with SUMMARY_COLUMNS appended from each configuration's sessions of runs, and per
    configuration its throttling, contention, power-limit and one-session warnings."""

    rows, warnings = [], {}
    limits = {name: machine.power_limits(launch.machine) for name, launch in launches.items() if launch}
    counted = {name: [kept_and_excluded(runs)[0] for runs in found] for name, found in sessions.items()}
    intervals = session_intervals(counted)
    for name in frame["configuration"]:
        kept = [r for runs in counted.get(name, []) for r in runs]
        found = measurement_columns([r.telemetry for r in kept], [r.tokens for r in kept])
        rows.append(
            {
                **{c: found.get(c) for c in SUMMARY_COLUMNS},
                **intervals.get(name, {}),
                "throttled_runs": found["throttled"],
                "contended_runs": found["contended"],
            }
        )
        one_session = name in intervals and math.isnan(intervals[name]["tokens_per_joule_ci95_low"])
        warnings[name] = _warnings(kept, limits, name) + ([ONE_SESSION_NOTE] if one_session else [])
    added = pd.DataFrame(rows, index=frame.index, columns=list(SUMMARY_COLUMNS))
    return pd.concat([frame, added], axis=1), warnings


def _warnings(kept: list[Run], limits: dict[str, dict[str, str]], name: str) -> list[str]:
    out = []
    slowed = [r.run for r in kept if telemetry.slowdowns(r.telemetry)]
    if slowed:
        reasons = sorted({s for r in kept for s in telemetry.slowdowns(r.telemetry)})
        out.append(f"clocks slowed down ({', '.join(reasons)}) in run(s) {', '.join(map(str, slowed))}")
    contended = [r.run for r in kept if telemetry.contended((r.telemetry or {}).get("contention"))]
    if contended:
        out.append(f"{len(contended)} of {len(kept)} run(s) measured under contention (runs.csv contended)")
    mine = limits.get(name)
    others = {other: limit for other, limit in limits.items() if limit and limit != mine}
    if mine and others:
        listed = ", ".join(f"{other} {', '.join(limit.values())}" for other, limit in others.items())
        out.append(f"GPU power limit {', '.join(mine.values())} differs from {listed}")
    return out


def window_columns(records: list[Window]) -> dict[str, Any]:
    """load.csv's LOAD_COLUMNS of one configuration at one level."""
    found = measurement_columns([w.telemetry for w in records], [w.tokens for w in records])
    return {
        **{c: found.get(c) for c in LOAD_COLUMNS},
        "throttled_windows": found["throttled"],
        "contended_windows": found["contended"],
    }


def contended_levels(table: pd.DataFrame) -> list[str]:
    """load.csv's levels measured under contention, one warning line each (the load tables job prints them)."""
    contended = table[pd.to_numeric(table["contended_windows"], errors="coerce").fillna(0) > 0]
    return [
        f"WARNING {row.configuration} at {row.load}: {row.contended_windows:.0f} of {row.windows:.0f} window(s) "
        f"measured under contention (other processes used the machine; docs/energy.md): do not compare them"
        for row in contended.itertuples()
    ]


def shortest_checkable_s(record: dict[str, Any]) -> float:
    """The shortest measurement whose two sources can be held to AGREEMENT_LIMIT: the counter and the power
    samples each resolve time only to one counter step (telemetry.counter_step_s) at either end, so a
    measurement must span 2 steps / AGREEMENT_LIMIT (100 steps at 2 %); a shorter one disagrees by its edges."""
    return 2 * telemetry.counter_step_s(record) / AGREEMENT_LIMIT


def agreement_lines(paths: Iterable[Path]) -> tuple[list[str], bool]:
    """Per run or window file: integrated GPU power against the energy counter; whether all agree within 2 %.
    Measurements too short to resolve 2 % (``shortest_checkable_s``) are named as such, not judged."""
    out, ok = [], True
    for path in paths:
        record = json_record(path).get("telemetry")
        found = telemetry.agreement(record)
        if found is None:
            out.append(f"{path}: no check ({telemetry.energy_of(record).source})")
            continue
        assert record is not None  # agreement() needs both sources
        if (duration := float(record["duration_s"])) < (shortest := shortest_checkable_s(record)):
            out.append(
                f"{path}: too short to check: {duration:.2f} s, where the energy counter moves in steps of "
                f"{telemetry.counter_step_s(record) * 1000:.0f} ms (2 % needs at least {shortest:.1f} s)"
            )
            continue
        ok &= abs(found) <= AGREEMENT_LIMIT
        energy = telemetry.energy_of(record)
        out.append(
            f"{path}: counter {energy.counter_j:.1f} J, integrated {energy.integrated_j:.1f} J, "
            f"{100 * found:+.2f} % {'ok' if abs(found) <= AGREEMENT_LIMIT else 'DISAGREE'}"
        )
    return out, ok


def json_record(path: Path) -> dict[str, Any]:
    import json

    return json.loads(path.read_text())


def main(argv: list[str] | None = None) -> int:
    root = Path((argv or sys.argv[1:] or [results.ROOT])[0])
    paths = sorted(root.glob("*/runs/**/run_*.json")) + sorted(root.glob("*/load/*/window_*.json"))
    lines, ok = agreement_lines(paths)
    if not lines:
        print(f"no run or window records under {root}: give a results folder (default {results.ROOT})")
        return 1
    checked = [line for line in lines if "no check" not in line and "too short" not in line]
    short = sum("too short" in line for line in lines)
    print("\n".join(lines))
    print(
        f"{len(checked)} of {len(lines)} measurements have both energy sources and are long enough to check"
        + (f" ({short} too short)" if short else "")
        + (
            f"; {'all agree' if ok else 'some DISAGREE'} within {100 * AGREEMENT_LIMIT:g} %"
            if checked
            else ": nothing could be checked"
        )
    )
    return 0 if ok and checked else 1


if __name__ == "__main__":
    sys.exit(main())
