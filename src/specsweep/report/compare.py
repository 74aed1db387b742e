"""Compare two result sets (two sweeps' results folders, or archives), configuration by configuration.

Configurations are matched by name *and* parameters (engine kind, flags, environment, draft
model, and every benchmark setting that changes what a run measures, as recorded in each
``launch.json``): a configuration whose name matches but whose
parameters differ is listed as such and not compared, because its delta would not mean what it
says, unless ``match="name"`` asks to compare such pairs on purpose (a CPU sweep against a GPU one):
then they are compared and ``differences`` says what differs. A configuration's sessions (server launches,
``<name>-s<k>``, grouped by ``session_of`` as the summary groups them) are one row.

The replicate is the session, as in summary.csv: a launch shifts throughput by a few percent, so two sets of
runs of one launch each differ beyond their own noise (an unchanged rerun was called different in 37-100 % of
simulated ones). Session k after is paired with session k before, each session's mean log rate the unit: the
ratio is exp(mean difference), with its paired t interval and test (``replicates.paired``). With one session
on a side the launch-to-launch variation is not measured: the row gives the runs' ratio of means with its
Fieller and bootstrap intervals and Welch's p (within one launch each, stats.py), and declares nothing. Runs
are those the summary counts (``rate_check.kept_and_excluded``: an excluded run is kept on disk, never used).

A pair measured on two machines (host or GPU models, from each side's launch record) is compared, but the
ratio mixes the change with the machine: the console says so first, naming both machines, and no difference
is declared (``significant`` empty). Neither is one resting on a run measured under contention, which is named.
"""

from __future__ import annotations

import json
import math
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

import numpy as np
import pandas as pd

from specsweep.analyse import replicates
from specsweep.maths import stats
from specsweep.measure import placement, telemetry
from specsweep.measure.rate_check import kept_and_excluded
from specsweep.record.rates import SINGLE_REQUEST_DECODE
from specsweep.record.results import LAUNCH_PATH, ROOT, RUN_PATH, Launch, Run

MATCHED_KEYS = ("kind", "args", "env", "draft_model")
# A row with one session on a side says so: its interval is conditional on those launches, so nothing is declared.
ONE_LAUNCH_EACH = (
    "one session (server launch) on a side: the interval is within-launch; launch-to-launch variation not "
    "measured; nothing declared (benchmark.sessions >= 2)"
)
# Benchmark settings that change no run's number: how many runs there are (the statistics say), how long to wait
# for a server or a request, the GPU memory check, and the load SLOs (goodput only, not tok/s). Every other
# setting (max_tokens, prompts, chat_template, temperature, seed, warm-up, order, load levels, ...) is matched.
NOT_MEASUREMENT = frozenset(
    {
        "runs",
        "adaptive",
        "ready_timeout_s",
        "request_timeout_s",
        "stop_grace_s",
        "gpu_memory_check",
        "gpu_release_timeout_s",
        "gpu_release_tolerance_mib",
        "load/slo",
    }
)
MATCH_MODES = ("parameters", "name")  # config compare.match

COLUMNS: dict[str, str] = {
    "configuration": "configuration name (the same in both result sets)",
    "status": "compared; parameters differ (what: before -> after), not compared; only in before; only in after; "
    "no run counts in before/after (all excluded)",
    "differences": "parameters that differ (what: before -> after), '; '-separated; with compare.match: name such "
    "pairs are compared",
    "runs_before": "runs counted in the first result set (as in summary.csv: excluded runs left out)",
    "runs_after": "runs counted in the second result set",
    "sessions_paired": "sessions (server launches) paired, session k after with session k before: the replicates "
    "of the interval and test; 1 when a side has one session (within-launch: nothing declared)",
    "decode_tok_s_before": f"{SINGLE_REQUEST_DECODE.label} in the first result set: geometric mean over the paired "
    "sessions of each session's geometric mean run rate (one session on a side: the runs' mean)",
    "decode_tok_s_after": f"{SINGLE_REQUEST_DECODE.label} in the second result set, as decode_tok_s_before",
    "ratio": "decode_tok_s_after / decode_tok_s_before",
    "delta_pct": "(ratio - 1) * 100",
    "ratio_ci95_low": "95 % interval of the ratio, lower bound: paired t on the sessions' mean log rates, "
    f"exp(mean d ± t·s_d/√n); one session on a side: the {stats.SPEEDUP_CI_METHOD} interval of the runs' "
    "ratio of means (within-launch)",
    "ratio_ci95_high": "95 % interval of the ratio, upper bound",
    "ratio_boot95_low": "one session on a side: 95 % percentile-bootstrap interval of the runs' ratio of means, "
    "lower bound (seeded); empty when sessions are paired",
    "ratio_boot95_high": "the bootstrap interval's upper bound",
    "p_value": "two-sided paired t-test of the sessions' log ratio; one session on a side: the runs' "
    f"{stats.TEST_METHOD} (within-launch)",
    "significant": "true when p_value < 0.05; empty when no test was possible, or when nothing is declared: one "
    "session on a side, the two sides ran on different machines, or a counted run was contended (warnings names "
    "them)",
    "warnings": "reasons not to trust the row (across machines: both named; runs measured under contention, by "
    "side and session run; one session on a side (a within-launch interval, nothing declared); sessions left "
    "unpaired; fewer than 3 runs, CV > 10 %, CI straddles 1)",
}


@dataclass
class ResultSet:
    source: str
    rates: dict[str, list[float]]  # session folder -> decode tok/s per run, in run order
    parameters: dict[str, dict[str, Any]]  # configuration -> matched parameters
    places: dict[str, dict[str, Any]] = field(default_factory=dict)  # configuration -> where it ran (placement)
    contended: dict[str, list[int]] = field(default_factory=dict)  # session folder -> counted runs under contention
    sessions: dict[str, list[str]] = field(default_factory=dict)  # configuration -> its session folders, in order

    def sessions_of(self) -> dict[str, list[str]]:
        """Configuration -> session folders; a folder no launch record groups is a configuration of its own."""
        grouped = {folder for folders in self.sessions.values() for folder in folders}
        return self.sessions | {name: [name] for name in self.rates if name not in grouped}


def load(path: str | Path) -> ResultSet:
    """A results folder, a folder holding results/, or a .tar/.tar.gz archive of a sweep."""
    path = Path(path)
    files: dict[str, bytes] = {}
    where: dict[str, str] = {}  # a record's name -> where a user finds it (a file, or archive:member)
    if path.is_dir():
        results = path / ROOT if (path / ROOT).is_dir() else path  # a sweep folder or its results/
        for member in results.rglob("*.json"):
            name = f"{ROOT}/{member.relative_to(results).as_posix()}"
            if RUN_PATH.search(name) or LAUNCH_PATH.search(name):
                files[name] = member.read_bytes()
                where[name] = str(member)
    elif path.is_file() and tarfile.is_tarfile(path):
        with tarfile.open(path) as archive:
            for member in archive.getmembers():
                if member.isfile() and (RUN_PATH.search(member.name) or LAUNCH_PATH.search(member.name)):
                    name = PurePosixPath(member.name).as_posix()
                    files[name] = archive.extractfile(member).read()
                    where[name] = f"{path}:{member.name}"
    else:
        raise FileNotFoundError(
            f"{path}: not a results folder or a sweep archive (.tar.gz){'' if path.exists() else ' (no such path)'}; "
            "give compare's before and after a sweep's folder, its results/, or its results/archive/<name>.tar.gz"
        )
    runs: dict[str, list[tuple[int, float]]] = {}
    parameters: dict[str, dict[str, Any]] = {}
    places: dict[str, dict[str, Any]] = {}
    contended: dict[str, list[int]] = {}
    session_of: dict[str, str] = {}
    for name, data in sorted(files.items()):
        if match := RUN_PATH.search(name):
            record = _record(Run, data, where[name], "run")
            counted = runs.setdefault(match[1], [])
            if kept_and_excluded([record])[0]:  # the summary's own selection
                counted.append((int(match[2]), record.decode_tokens_per_s))
                if telemetry.contended((record.telemetry or {}).get("contention")):
                    contended.setdefault(match[1], []).append(int(match[2]))
        elif match := LAUNCH_PATH.search(name):
            launch = _record(Launch, data, where[name], "launch")
            parameters[match[1]] = {k: launch.configuration.get(k) for k in MATCHED_KEYS} | measurement_settings(
                launch.benchmark or {}
            )
            places[match[1]] = placement.of_launch(launch)
            session_of[match[1]] = launch.configuration.get("session_of") or match[1]
    if not runs:
        raise ValueError(f"{path}: no results/<configuration>/runs/run_<i>.json found")
    return ResultSet(
        str(path),
        {n: [r for _, r in sorted(v)] for n, v in runs.items()},
        parameters,
        places,
        {n: sorted(v) for n, v in contended.items()},
        _sessions(session_of),
    )


def _sessions(session_of: dict[str, str]) -> dict[str, list[str]]:
    """Configuration -> its session folders: its own first, then <name>-s<k> by k (design.session_name)."""
    found: dict[str, list[str]] = {}
    for folder, name in session_of.items():
        found.setdefault(name, []).append(folder)

    def order(name: str, folder: str) -> tuple[float, str]:
        k = folder.removeprefix(f"{name}-s")
        return (1 if folder == name else int(k) if k.isdigit() else math.inf), folder

    return {name: sorted(folders, key=lambda f: order(name, f)) for name, folders in found.items()}


def _record(kind: type[Run] | type[Launch], data: bytes, where: str, what: str) -> Any:
    """A run or launch record of a compared result set, or a ValueError naming its file and the fix (a damaged
    file gave ``KeyError: 'client'`` or a bare ``JSONDecodeError``). Compare only reads: the file, perhaps in
    another person's archive, is never set aside."""
    try:
        record = json.loads(data)
        if not isinstance(record, dict):
            raise TypeError(f"a JSON {type(record).__name__}, not an object")
        return kind.from_json(record)
    except (KeyError, TypeError, ValueError) as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        why = f"no key {error}" if isinstance(error, KeyError) else str(error)
        raise ValueError(
            f"{where}: damaged {what} record ({why}); compare reads every {what} record of both result sets: "
            f"restore the file from the sweep's archive (results/archive/), or rerun that sweep's `all` in its "
            f"folder (a damaged file is set aside and its configuration measured again)"
        ) from None


def measurement_settings(benchmark: dict[str, Any], prefix: str = "benchmark") -> dict[str, Any]:
    """``benchmark/<key>`` -> value for every setting a run's numbers depend on (not ``NOT_MEASUREMENT``);
    ``load`` key by key, so that its SLOs can be left out."""
    found: dict[str, Any] = {}
    for key, value in benchmark.items():
        path = f"{prefix}/{key}"
        if path.partition("/")[2] in NOT_MEASUREMENT:
            continue
        if key == "load" and prefix == "benchmark" and isinstance(value, dict):
            found |= measurement_settings(value, path)
        else:
            found[path] = value
    return found


def compare(before: ResultSet, after: ResultSet, match: str = "parameters") -> pd.DataFrame:
    """One row per configuration name of either set; ``match`` (one of MATCH_MODES) says whether a pair
    whose parameters differ is compared (``name``) or only listed (``parameters``)."""
    if match not in MATCH_MODES:
        raise ValueError(f"compare/match: {match!r}; use one of {', '.join(MATCH_MODES)}")
    rows = []
    sessions_before, sessions_after = before.sessions_of(), after.sessions_of()
    for name in dict.fromkeys([*sessions_before, *sessions_after]):
        row: dict[str, Any] = {"configuration": name}
        if name not in sessions_after or name not in sessions_before:
            row["status"] = "only in before" if name in sessions_before else "only in after"
            rows.append(row)
            continue
        # each side's sessions with counted runs, in session order
        y = [before.rates[f] for f in sessions_before[name] if before.rates.get(f)]
        x = [after.rates[f] for f in sessions_after[name] if after.rates.get(f)]
        if not y or not x:
            row["status"] = f"no run counts in {'before' if not y else 'after'} (all excluded)"
            rows.append(row)
            continue
        first_before, first_after = sessions_before[name][0], sessions_after[name][0]
        differ = _differences(before.parameters.get(first_before, {}), after.parameters.get(first_after, {}))
        row.update(runs_before=sum(map(len, y)), runs_after=sum(map(len, x)), differences="; ".join(differ))
        if differ and match == "parameters":
            row["status"] = f"parameters differ ({', '.join(differ)})"
            levels = _session_ratio(x, y)[0]
            rows.append(row | {k: levels[k] for k in ("decode_tok_s_before", "decode_tok_s_after")})
            continue
        numbers, warnings = _session_ratio(x, y)
        undeclared = [
            *(
                [across]
                if (across := across_machines(before.places.get(first_before), after.places.get(first_after)))
                else []
            ),
            *contended_runs(_contended(before, sessions_before[name]), _contended(after, sessions_after[name])),
        ]
        if undeclared:  # no verdict across machines or contention
            numbers["significant"] = None
        row.update(status="compared", **numbers, warnings="; ".join(undeclared + warnings))
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.reindex(columns=list(COLUMNS))


ACROSS = "across machines"
CONTENDED = "contended"


def across_machines(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str | None:
    """``across machines: before on <host> (<GPUs>), after on <host> (<GPUs>)``, or None when both ran on one
    machine or either side's machine is not recorded."""
    if not before or not after or not placement.cross_machine_warning(after, before):
        return None
    return f"{ACROSS}: before on {placement.machine_label(before)}, after on {placement.machine_label(after)}"


def _session_ratio(x: list[list[float]], y: list[list[float]]) -> tuple[dict[str, Any], list[str]]:
    """The row's numbers from each side's sessions' run rates (after ``x``, before ``y``), and its warnings:
    sessions paired when both sides have two, else the runs within one launch each, declaring nothing."""
    runs_x, runs_y = [r for s in x for r in s], [r for s in y for r in s]
    noise_before = [f"before: {w}" for w in stats.warnings_for(stats.describe(runs_y))]
    paired = min(len(x), len(y))
    if paired < 2:
        ratio = stats.ratio(runs_x, runs_y)
        numbers = {
            "sessions_paired": paired,
            "decode_tok_s_before": sum(runs_y) / len(runs_y),
            "decode_tok_s_after": sum(runs_x) / len(runs_x),
            "ratio": ratio.ratio,
            "ratio_ci95_low": ratio.ci_low,
            "ratio_ci95_high": ratio.ci_high,
            "ratio_boot95_low": ratio.boot_low,
            "ratio_boot95_high": ratio.boot_high,
            "p_value": ratio.p_value,
            "significant": None,
        }
        warnings = [ONE_LAUNCH_EACH, *stats.warnings_for(stats.describe(runs_x), ratio), *noise_before]
        return numbers | {"delta_pct": 100 * (ratio.ratio - 1)}, warnings
    units_x = [float(np.mean(np.log(s))) for s in x[:paired]]
    units_y = [float(np.mean(np.log(s))) for s in y[:paired]]
    found = replicates.paired(units_x, units_y)
    warnings = [*stats.warnings_for(stats.describe(runs_x)), *noise_before]
    if max(len(x), len(y)) > paired:
        warnings.append(f"sessions {paired + 1}+ of {'before' if len(y) > paired else 'after'} unpaired: left out")
    if not math.isnan(found.ci_low) and found.ci_low <= 1.0 <= found.ci_high:
        warnings.append(f"ratio CI [{found.ci_low:.3f}, {found.ci_high:.3f}] straddles 1: no demonstrated difference")
    numbers = {
        "sessions_paired": paired,
        "decode_tok_s_before": math.exp(float(np.mean(units_y))),
        "decode_tok_s_after": math.exp(float(np.mean(units_x))),
        "ratio": found.ratio,
        "delta_pct": 100 * (found.ratio - 1),
        "ratio_ci95_low": found.ci_low,
        "ratio_ci95_high": found.ci_high,
        "p_value": found.p_value,
        "significant": None if math.isnan(found.p_value) else bool(found.p_value < stats.ALPHA),
    }
    return numbers, warnings


def _contended(result: ResultSet, folders: list[str]) -> list[str]:
    """The contended counted runs of a configuration's sessions: ``2`` in its first, ``<session> run 2`` after."""
    return [
        str(run) if k == 0 else f"{folder} run {run}"
        for k, folder in enumerate(folders)
        for run in result.contended.get(folder, [])
    ]


def contended_runs(before: list[str] | None, after: list[str] | None) -> list[str]:
    """``before: run 2, 3 contended`` per side with contended runs (runs.csv's contended says why)."""
    return [
        f"{side}: run {', '.join(runs)} {CONTENDED} (runs.csv contended)"
        for side, runs in (("before", before), ("after", after))
        if runs
    ]


def _machines(frame: pd.DataFrame) -> str | None:
    """The console's first line when compared pairs crossed machines: both machines named, nothing declared."""
    if "warnings" not in frame:
        return None
    found = [
        part
        for warnings in frame["warnings"].dropna()
        for part in str(warnings).split("; ")
        if part.startswith(f"{ACROSS}: ")
    ]
    if not found:
        return None
    pairs = "; ".join(dict.fromkeys(part.removeprefix(f"{ACROSS}: ") for part in found))
    return (
        f"compare: ACROSS MACHINES: {pairs}: a ratio across machines mixes the change with the machine, so nothing "
        "is declared (no significance); compare sweeps of one machine for a verdict"
    )


def _differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs between two configurations' parameters, e.g. ``args -c: 1024 -> 2048``."""
    found = []
    # benchmark settings both launches recorded (older launch records have none: not evidence of a change)
    for key in dict.fromkeys([*MATCHED_KEYS, *sorted(k for k in before.keys() & after.keys() if "/" in k)]):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            found += [
                f"{key} {k}: {old.get(k)} -> {new.get(k)}"
                for k in sorted(set(old) | set(new), key=str)
                if old.get(k) != new.get(k)
            ]
        else:
            found.append(f"{key}: {old} -> {new}")
    return found


def nothing_compared(frame: pd.DataFrame) -> str | None:
    """Why no configuration was compared (and what to do), or None when some were."""
    if (frame["status"] == "compared").any():
        return None
    differ = frame["status"].astype(str).str.startswith("parameters differ")
    if differ.any():
        return (
            f"nothing compared: the {int(differ.sum())} configuration(s) in both result sets have different "
            f"parameters; to compare them by name anyway, add match: name, e.g. --config "
            f"compare='{{before: A, after: B, match: name}}'"
        )
    return "nothing compared: no configuration name is in both result sets (see the status column)"


def describe(frame: pd.DataFrame, before: str, after: str) -> list[str]:
    """Console lines: which intervals and test, then one line per configuration."""
    lines = [
        *([machines] if (machines := _machines(frame)) else []),
        f"compare: after = {after}",
        f"         before = {before}",
        f"ratio = {SINGLE_REQUEST_DECODE.name} after / before; replicates: sessions, session k after paired with "
        "session k before (each session's mean log rate); 95 % paired-t CI; p = paired t-test",
        f"  where a side has one session: the runs' ratio of means, {stats.SPEEDUP_CI_METHOD} CI, "
        f"{stats.TEST_METHOD} p: {ONE_LAUNCH_EACH}",
    ]
    if (why := nothing_compared(frame)) is not None:
        lines.append(f"WARNING: {why}")
    for row in frame.itertuples():
        if row.status != "compared":
            lines.append(f"{row.configuration}: {row.status}")
            continue
        undeclared = [
            part
            for part in str(row.warnings).split("; ")
            if part.startswith(f"{ACROSS}: ") or part.endswith(f"{CONTENDED} (runs.csv contended)")
        ]
        if undeclared:
            verdict = f"no significance declared: {'; '.join(undeclared)}"
        elif row.sessions_paired == 1:
            verdict = "one session on a side: within-launch, nothing declared"
        else:
            verdict = (
                "no test possible"
                if pd.isna(row.significant)
                else "significant"
                if row.significant
                else "not significant"
            )
        lines.append(
            f"{row.configuration}: {row.decode_tok_s_before:.1f} -> "
            f"{SINGLE_REQUEST_DECODE.quote(row.decode_tok_s_after)}, "
            f"{row.delta_pct:+.1f} % [CI {100 * (row.ratio_ci95_low - 1):+.1f}, "
            f"{100 * (row.ratio_ci95_high - 1):+.1f} %], p = {row.p_value:.3g} ({verdict})"
            + (
                f"; parameters differ: {row.differences}"
                if isinstance(row.differences, str) and row.differences
                else ""
            )
        )
    return lines


def write(before: str, after: str, table: str, figure: str, progress: TextIO, match: str = "parameters") -> None:
    """The compare job: comparison.csv and its figure (saying why, when nothing was compared), and the
    findings in words."""
    from specsweep.analyse.aggregate import write_csv
    from specsweep.report import compare_peer, figures

    if compare_peer.peer_result(before) is not None:  # a vllm bench serve --save-result file or an AIPerf export
        compare_peer.write(before, after, table, figure, progress)
        return
    frame = compare(load(before), load(after), match)
    write_csv(frame, table)
    figures.save(
        figures.comparison(frame, before, after, nothing_compared(frame), _machines(frame)),
        Path(figure).with_suffix(""),
    )
    for line in describe(frame, before, after):
        print(line, file=progress)
