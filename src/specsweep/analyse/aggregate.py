"""Aggregate per-run records into ``summary.csv``: one row per configuration.

Every column is described in ``COLUMNS`` (and docs/summary.md is checked against it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from specsweep.analyse import energy, power, replicates, stats
from specsweep.analyse.stats import describe
from specsweep.measure import placement, telemetry
from specsweep.measure.rate_check import kept_and_excluded
from specsweep.plan import design
from specsweep.plan.config import Configuration, parameter_value, swept_parameters
from specsweep.plan.factors import baselines_by_configuration
from specsweep.record import speculation
from specsweep.record.atomic import atomic_open
from specsweep.record.rates import SINGLE_REQUEST_DECODE
from specsweep.record.redact import REDACTED, is_secret
from specsweep.record.results import ClientTimings, Launch, Run

COLUMNS: dict[str, str] = {
    "configuration": "configuration name (results/<configuration>/)",
    "group": "configurations entry it came from (differs from the name for grid points)",
    "engine": "engine name from config engines",
    "kind": "engine adapter kind (config engines.<engine>.kind)",
    "engine_version": "version or build the server reported (llama.cpp /props build_info)",
    "host": "node (hostname) the configuration was measured on (launch.json placement)",
    "baseline": "true for a baseline configuration",
    "compared_with": "the baseline this row's speedup, p-value and text match are against (empty for a baseline): "
    "the one sharing its other factor levels, or the one its entry names",
    "status": "ok; stale (provisional summary only: runs measured under parameters the config no longer has, "
    "the row labelled with those); or why there is no result: excluded (runs measured, none counts: see "
    "runs_excluded), failed (<evidence folder>), damaged (<file>: why), missing",
    "runs": "measured runs the statistics rest on (all sessions)",
    "sessions": "sessions (server launches, benchmark.sessions) with counted runs: the replicates of every "
    "interval and test",
    "prompts": "prompts in a pass (distinct prompts measured): the blocks a comparison is paired on",
    "interval_unit": "the replicate unit of the intervals and tests: session; pass (one session per "
    "configuration: the intervals are within one launch, and no test declares a difference); empty when "
    "none is possible",
    "ci_df": "degrees of freedom of the pooled log-scale spread of the units (sum over configurations of "
    "units - 1; contended sessions left out)",
    "runs_excluded": "runs kept on disk but left out of the statistics: the engine's token count disagreed with "
    "its stream (docs/load.md), or the client's decode rate disagreed with the engine's own beyond "
    "benchmark.rate_tolerance_pct, or could not be timed",
    "tokens_per_run": "tokens generated in each run (all runs must equal benchmark.max_tokens)",
    "decode_tok_s_mean": f"{SINGLE_REQUEST_DECODE.label} of the workload, client-measured, first token excluded: "
    "decode tokens / decode time of one pass over the prompts, geometric mean over the units (docs/summary.md)",
    "decode_tok_s_std": "standard deviation of the units' throughput (tokens/s)",
    "decode_tok_s_cv": "the variation 'noisy' is judged on: decode_tok_s_between_session_cv with >= 3 sessions (2 "
    "give it one degree of freedom), else decode_tok_s_within_session_cv; empty when not estimable (with 2 sessions "
    "the conclusion says 'noisy not judged')",
    "decode_tok_s_between_session_cv": "standard deviation of the log throughput of this configuration's sessions "
    "(≈ CV; launch-to-launch variation plus the noise of a session's mean; empty with one session)",
    "decode_tok_s_within_session_cv": "pooled standard deviation of the log decode rate of a prompt's repeated runs "
    "within a session (≈ CV; empty with one run per prompt per session)",
    "decode_tok_s_min": "slowest unit (tokens/s)",
    "decode_tok_s_max": "fastest unit (tokens/s)",
    "decode_tok_s_ci95_low": "95 % interval of decode_tok_s_mean, lower bound: exp(mean log ± t·s/√units) with "
    "the pooled log-scale spread (always positive; empty when no interval is possible)",
    "decode_tok_s_ci95_high": "95 % interval of decode_tok_s_mean, upper bound",
    "decode_tok_s_median": "median unit (tokens/s)",
    "speedup": "workload throughput / the baseline's (compared_with), both over the prompts both measured",
    "speedup_pct": "(speedup - 1) * 100",
    "speedup_ci95_low": "95 % interval of the speedup, lower bound: exp(Δ mean log ± t·s·√(1/n + 1/n_b)) "
    "(empty when no interval is possible)",
    "speedup_ci95_high": "95 % interval of the speedup, upper bound",
    "speedup_p_value": "two-sided t-test of log speedup = 0 on the units, raw (not adjusted for multiplicity)",
    "speedup_p_holm": "speedup_p_value adjusted by Holm over the sweep's comparisons, whatever their baseline "
    "(empty with one session per configuration: a within-launch test declares nothing)",
    "comparisons": "comparisons in that family: every configuration of the sweep compared with a baseline and "
    "tested (a factorial sweep's several baselines included)",
    "significant": "true when speedup_p_holm < 0.05 (empty for the baseline, when no test was possible, and "
    "with one session per configuration)",
    "speedup_sim95_low": "simultaneous 95 % interval of the speedup over the family's comparisons (Bonferroni), "
    "lower bound: the one to quote for a configuration selected as the best",
    "speedup_sim95_high": "simultaneous 95 % interval of the speedup, upper bound",
    "engine_decode_tok_s_mean": "the engine's own decode throughput, mean over runs (llama.cpp predicted_per_second)",
    "ttft_ms_median": "median time to first token as the client saw it (ms)",
    "itl_ms_median": "median inter-event latency over all runs (ms); an event may carry several tokens",
    "drafted": "draft tokens proposed over all runs (empty without speculation, or when the engine did not "
    "report them: SGLang <= 0.5.4 without its server args)",
    "accepted": "draft tokens accepted over all runs",
    "verify_steps": "verification steps over all runs (from engine counters)",
    "acceptance_rate": "accepted / drafted (drafts only, bonus token excluded)",
    "accept_length": "tokens emitted per verify step, bonus included: 1 + accepted / verify_steps",
    "speculation_source": "where drafted/accepted came from, most precise first: per-request response fields, "
    "Prometheus counter deltas, else the server log (profile.csv run rows; for vLLM its per-interval "
    "`SpecDecoding metrics` rows, warmup included, said as `server log (logging intervals, warmup included)`)",
    "text_matches_baseline": "true when every run's text equals the baseline's for the same prompt",
    "warnings": "why not to trust the row at face value, '; '-separated: one session (launch-to-launch variation not "
    "measured, nothing declared), noise not estimable, CV above 10 %, a speedup CI that straddles 1, "
    "contended sessions left out of the pooled spread, a spread larger than the others' (its intervals from its "
    "own), a profile parser that matched no line, measured on "
    "another node or GPU model than the baseline, and each session's launch record warnings (launch.json: "
    "re-measured after a failed attempt, a host beyond loopback, quantised counters, GPUs; prefixed "
    "`<session>: ` for a session k >= 2) (empty when none)",
    **energy.SUMMARY_COLUMNS,  # energy per token, clocks, throttling, contention (analyse/energy.py)
    **power.SUMMARY_COLUMNS,  # the smallest detectable speedup, sessions for benchmark.detect_pct (analyse/power.py)
}


JUDGED_SESSIONS = 3  # sessions from which the between-session CV judges 'noisy' (2 leave it 1 degree of freedom)


def summarise(
    configurations: dict[str, Configuration], runs: dict[str, list[Run]], launches: dict[str, Launch]
) -> pd.DataFrame:
    """summary.csv's statistics columns from runs and launches (``summary_table`` adds the logs' columns):
    one row per configuration, its sessions (design.sessions_of) as the replicates (analyse/replicates.py)."""
    sessions = design.sessions_of(configurations)
    measured = design.measured_configurations(configurations)
    swept = swept_parameters(measured)
    compared = baselines_by_configuration(measured)
    excluded = {
        name: sum(len(kept_and_excluded(runs.get(s, []))[1]) for s in names) for name, names in sessions.items()
    }
    counted = {
        name: [kept for s in names if (kept := kept_and_excluded(runs.get(s, []))[0])]
        for name, names in sessions.items()
    }
    # a session with a contended run is reported, but left out of the spread every interval shares
    busy = {
        name: [s for s in names if _contended(kept_and_excluded(runs.get(s, []))[0])]
        for name, names in sessions.items()
    }
    quiet = {name: [runs for runs in found if not _contended(runs)] for name, found in counted.items()}
    model = replicates.pooled(counted, quiet)
    # a configuration whose spread is larger than the others' gets its own (replicates.larger_spread)
    larger = replicates.larger_spread({name: quiet[name] for name in measured}, model)
    levels = {name: replicates.level(counted[name], model, own=name in larger) for name in measured}
    comparisons = {
        name: replicates.compare(counted[name], counted[against], model, own=bool({name, against} & larger))
        for name, against in compared.items()
        if against is not None
    }
    family = _families(compared, comparisons)
    if not model.declares:  # within one launch a launch offset reads as a difference: no verdict
        family = {name: (math.nan, size) for name, (_, size) in family.items()}
    merged = {name: [r for session in counted[name] for r in session] for name in measured}
    texts = {name: {r.prompt_index: r.text_sha256 for r in merged[name]} for name, a in compared.items() if a is None}
    rows = [
        _row(c, counted[c.name], launches.get(c.name), swept, texts[compared[c.name] or c.name], levels[c.name], model)
        for c in measured.values()
    ]
    frame = pd.DataFrame(rows)
    frame["compared_with"] = [compared[name] for name in frame["configuration"]]
    for column, value in (
        ("speedup", lambda c, f: c.ratio),
        ("speedup_ci95_low", lambda c, f: c.ci_low),
        ("speedup_ci95_high", lambda c, f: c.ci_high),
        ("speedup_p_value", lambda c, f: c.p_value),
        ("speedup_p_holm", lambda c, f: f[0]),
        ("comparisons", lambda c, f: f[1]),
        ("speedup_sim95_low", lambda c, f: c.interval(stats.simultaneous_confidence(f[1]))[0]),
        ("speedup_sim95_high", lambda c, f: c.interval(stats.simultaneous_confidence(f[1]))[1]),
    ):
        frame[column] = [
            value(comparisons[n], family[n]) if n in comparisons else (1.0 if column == "speedup" else None)
            for n in frame["configuration"]
        ]
    frame["speedup_pct"] = (frame["speedup"] - 1.0) * 100.0
    frame["significant"] = [
        None if n not in family or math.isnan(family[n][0]) else bool(family[n][0] < stats.ALPHA)
        for n in frame["configuration"]
    ]
    frame["runs_excluded"] = [excluded.get(name, 0) for name in frame["configuration"]]
    # measured, but no run counts: say so rather than `missing`
    frame.loc[(frame["runs"] == 0) & (frame["runs_excluded"] > 0), "status"] = "excluded"
    where = {name: placement.of_launch(launch) for name, launch in launches.items() if launch}
    frame["warnings"] = [
        "; ".join(
            replicates_warnings(levels[name], comparisons.get(name), model, len(counted[name]), cv)
            + ([f"{excluded[name]} run(s) excluded: client and engine rates disagree"] if excluded.get(name) else [])
            + ([f"contended session(s) left out of the pooled spread: {', '.join(busy[name])}"] if busy[name] else [])
            + (["spread larger than the others' (F test): intervals from its own spread"] if name in larger else [])
            + [
                w
                for w in [placement.cross_machine_warning(where.get(name, {}), where.get(compared[name] or name, {}))]
                if w
            ]
        )
        for name, cv in zip(frame["configuration"], frame["decode_tok_s_cv"], strict=True)
    ]
    ordered = [c for c in COLUMNS if c in frame.columns]
    ordered[ordered.index("status") + 1 : ordered.index("status") + 1] = swept
    return frame[ordered]


def _contended(runs: list[Run]) -> bool:
    return any(telemetry.contended((r.telemetry or {}).get("contention")) for r in runs)


def _families(
    compared: dict[str, str | None], comparisons: dict[str, replicates.Comparison]
) -> dict[str, tuple[float, int]]:
    """Per compared configuration: its Holm-adjusted p and the family's number of comparisons (those with a
    p-value). The family is the sweep: a factorial sweep compares each configuration with its own baseline,
    but asks one question of them all; a family per baseline held each to 5 % (families of one, 16 % A/A
    false positives over a sweep)."""
    members = [n for n, a in compared.items() if a is not None]
    raw = [comparisons[n].p_value for n in members]
    tested = sum(not math.isnan(p) for p in raw)
    return {n: (p, tested) for n, p in zip(members, stats.holm(raw), strict=True)}


def replicates_warnings(
    level: replicates.Level,
    comparison: replicates.Comparison | None,
    model: replicates.Pooled,
    sessions: int,
    cv: float | None,
) -> list[str]:
    """Reasons not to trust a configuration's numbers at face value (empty when there are none)."""
    if level.n == 0:
        return ["no runs"]
    found = [model.note] if model.note and sessions else []
    if cv is not None and not math.isnan(cv) and cv > stats.CV_WARNING:
        found.append(f"noisy: CV {100 * cv:.1f} % > {100 * stats.CV_WARNING:.0f} %")
    if comparison is not None and not math.isnan(comparison.ci_low) and comparison.ci_low <= 1.0 <= comparison.ci_high:
        found.append(
            f"speedup CI [{comparison.ci_low:.3f}, {comparison.ci_high:.3f}] straddles 1: no demonstrated difference"
        )
    return found


@dataclass(frozen=True)
class Measured:
    """What a sweep measured, as the tables read it: per configuration its runs, launch and log profile."""

    configurations: dict[str, Configuration]
    runs: dict[str, list[Run]]
    launches: dict[str, Launch]
    profiles: dict[str, pd.DataFrame]  # profile.csv of each configuration whose server log was parsed
    # what parsing each server log warned of (a profile parser that matched no line), per configuration
    log_warnings: dict[str, list[str]] = field(default_factory=dict)


def summary_table(
    measured: Measured,
    profile_parsers: dict[str, dict[str, Any]],
    statuses: dict[str, str] | None = None,
    detect_pct: float | None = None,
) -> pd.DataFrame:
    """summary.csv: the one builder, for a finished sweep (the summary job) and an unfinished one (the
    ``onerror`` path, which passes each configuration's ``status``), so both have the same columns."""
    frame = summarise(measured.configurations, measured.runs, measured.launches)
    sessions = design.sessions_of(measured.configurations)
    if statuses is not None:
        # a configuration is as far as its least finished session (ok only when every one is)
        frame["status"] = [
            next((statuses[s] for s in sessions[name] if statuses.get(s, "ok") != "ok"), statuses.get(name))
            for name in frame["configuration"]
        ]
    warnings = {
        name: [w for s in names for w in measured.log_warnings.get(s, [])]
        + launch_warnings(names, measured.launches)
        + refused_speculation(names, measured.runs)
        for name, names in sessions.items()
    }
    if any(warnings.values()):
        frame = add_warnings(frame, warnings)
    # each session's server log, one profile per configuration
    profiles = {
        name: pd.concat(found, ignore_index=True)
        for name, names in sessions.items()
        if (found := [measured.profiles[s] for s in names if s in measured.profiles])
    }
    frame = fill_speculation_from_logs(frame, profiles)
    frame, energy_warnings = energy.summary_columns(frame, *_of_every_session(sessions, measured))
    frame = add_warnings(frame, energy_warnings)
    frame = power.summary_columns(frame, detect_pct)
    return add_profile_columns(frame, profiles, profile_parsers)


def refused_speculation(sessions: list[str], runs: dict[str, list[Run]]) -> list[str]:
    """The runs whose speculation counts were impossible, named: their counts are in no total."""
    return [
        f"{session} run {r.run}: {r.speculation_refused} (not in drafted/accepted)"
        for session in sessions
        for r in runs.get(session, [])
        if r.speculation_refused
    ]


def launch_warnings(sessions: list[str], launches: dict[str, Launch]) -> list[str]:
    """What the sessions' launch records warn of (a node failed under an earlier attempt, ...), each once;
    a later session's prefixed with its name."""
    found: list[str] = []
    for index, session in enumerate(sessions):
        for warning in launches[session].warnings if session in launches else []:
            text = warning if index == 0 else f"{session}: {warning}"
            if warning not in found and text not in found:
                found.append(text)
    return found


def _of_every_session(
    sessions: dict[str, list[str]], measured: Measured
) -> tuple[dict[str, list[list[Run]]], dict[str, Launch]]:
    """Per configuration, the runs of each of its sessions and its first session's launch (the machine it ran on)."""
    runs = {name: [measured.runs.get(s, []) for s in names] for name, names in sessions.items()}
    launches = {name: measured.launches[names[0]] for name, names in sessions.items() if names[0] in measured.launches}
    return runs, launches


# runs.csv, one row per measured run, in this column order (docs/runs.md gives the same table).
RUNS_COLUMNS: dict[str, str] = {
    "configuration": "configuration name (the one of summary.csv)",
    "session": "the session (server launch) the run was measured in: its results folder, results/<session>/ "
    "(the configuration's own name for its first session, <configuration>-s<k> for session k)",
    "run": "run index within the session, 0-based, in the order measured",
    "prompt_index": "0-based index of the prompt in benchmark.prompts (blank lines and # comments skipped): run i "
    "uses prompt i modulo the number of prompts, so one index is one text in every configuration",
    "category": "the prompt's category in the dataset (benchmark.prompts as JSONL; one category for a plain file)",
    "tokens": "tokens the engine generated (the prompt's max_tokens in a dataset, else benchmark.max_tokens)",
    "ttft_ms": "time to first token as the client saw it (ms)",
    "decode_ms": "first to last content event (ms)",
    "e2e_ms": "request sent to response complete (ms)",
    "decode_tok_s": f"{SINGLE_REQUEST_DECODE.label}, client-measured: (tokens - 1) / decode time (the first "
    "token is TTFT's)",
    "itl_median_ms": "median interval between content events (ms); an event may carry several tokens",
    "itl_p90_ms": "90th percentile of that interval (ms)",
    "content_events": "stream events that carried generated text",
    "engine_decode_tok_s": "the engine's own decode throughput for this request (llama.cpp "
    "timings.predicted_per_second; empty where the engine reports none)",
    "drafted": "draft tokens proposed during this run (0 when a speculative server drafted nothing; empty without "
    "speculation, or when the engine did not report them)",
    "accepted": "draft tokens accepted during this run",
    "verify_steps": "verification steps during this run",
    "speculation_source": "where the counts came from: the response's own fields or Prometheus counter deltas "
    "around the run; 'refused: why' when they were impossible (a counter that fell, more accepted than drafted): "
    "the counts are then empty and in no total",
    "excluded": "why the run is left out of the statistics (the client's decode rate disagreed with the engine's "
    "own beyond benchmark.rate_tolerance_pct, or could not be timed); empty when it counts",
    **energy.RUN_COLUMNS,  # energy, clocks and contention while the run was measured (analyse/energy.py)
}


def add_warnings(frame: pd.DataFrame, extra: dict[str, list[str]]) -> pd.DataFrame:
    """Append more warnings (e.g. a profile parser that matched nothing) to each configuration's."""
    frame = frame.copy()
    frame["warnings"] = [
        "; ".join([w for w in [text if isinstance(text, str) else ""] if w] + extra.get(name, []))
        for name, text in zip(frame["configuration"], frame["warnings"], strict=True)
    ]
    return frame


# The run record's client timings (seconds) as runs.csv columns: every table gives durations in milliseconds
# and the decode rate under the one name every table uses for it (decode_tok_s).
CLIENT_COLUMNS = {
    "ttft_s": ("ttft_ms", 1000.0),
    "decode_s": ("decode_ms", 1000.0),
    "e2e_s": ("e2e_ms", 1000.0),
    "decode_tokens_per_s": ("decode_tok_s", 1.0),
    "itl_median_s": ("itl_median_ms", 1000.0),
    "itl_p90_s": ("itl_p90_ms", 1000.0),
}


def client_columns(client: ClientTimings) -> dict[str, Any]:
    """runs.csv's columns of a run's client timings (CLIENT_COLUMNS)."""
    out: dict[str, Any] = {}
    for key, value in asdict(client).items():
        name, scale = CLIENT_COLUMNS.get(key, (key, None))
        out[name] = value * scale if scale is not None and value is not None else value
    return out


def runs_table(runs: dict[str, list[Run]], configurations: Mapping[str, Configuration] | None = None) -> pd.DataFrame:
    """runs.csv: per run, which prompt, the client's timings, the engine's own decode rate, the speculation
    counts (empty without speculation or when the engine did not report them) and why the run is left out
    of the statistics (empty when it counts)."""
    of = {name: c.session_of or name for name, c in (configurations or {}).items()}
    rows = [
        {
            "configuration": of.get(name, name),
            "session": name,
            "run": r.run,
            "prompt_index": r.prompt_index,
            "category": r.category,
            "tokens": r.tokens,
            **client_columns(r.client),
            "engine_decode_tok_s": r.engine.get("timings", {}).get("predicted_per_second"),
            **(
                {
                    "drafted": r.speculation.drafted,
                    "accepted": r.speculation.accepted,
                    "verify_steps": r.speculation.verify_steps,
                    "speculation_source": r.speculation.source,
                }
                if r.speculation
                else {"speculation_source": f"refused: {r.speculation_refused}"}
                if r.speculation_refused
                else {}
            ),
            "excluded": r.excluded,
            **energy.run_columns(r),
        }
        for name, records in runs.items()
        for r in sorted(records, key=lambda r: r.run)
    ]
    return pd.DataFrame(rows).reindex(columns=list(RUNS_COLUMNS))


def _row(
    configuration: Configuration,
    sessions: list[list[Run]],
    launch: Launch | None,
    swept: list[str],
    baseline_texts: dict[int, str],
    level: replicates.Level,
    model: replicates.Pooled,
) -> dict[str, Any]:
    runs = [r for session in sessions for r in session]
    # Only means and medians of these
    engine_rate = describe([r.engine_tokens_per_s for r in runs], intervals=False)
    spec = speculation.total([r.speculation for r in runs if r.speculation])
    spread = describe(list(level.unit_rates), intervals=False)
    between = replicates.pooled_sd([replicates.units(sessions, replicates.SESSION)])[0] if len(sessions) > 1 else None
    within = replicates.within_session_cv(sessions)
    row: dict[str, Any] = {
        "configuration": configuration.name,
        "group": configuration.group,
        "engine": configuration.engine,
        "kind": configuration.kind,
        "engine_version": launch.engine_version if launch else None,
        "host": placement.of_launch(launch)["host"] if launch else None,
        "baseline": configuration.baseline,
        "status": "ok" if runs else "missing",
        "runs": len(runs),
        "sessions": len(sessions),
        "prompts": len({r.prompt_index for r in runs}),
        "interval_unit": model.unit or None,
        "ci_df": model.df,
        "tokens_per_run": runs[0].tokens if runs else None,
        "decode_tok_s_mean": level.rate,
        "decode_tok_s_std": spread.std,
        # two sessions' spread has one degree of freedom: too few to call a configuration noisy
        "decode_tok_s_cv": between if len(sessions) >= JUDGED_SESSIONS else _known(within),
        "decode_tok_s_between_session_cv": between,
        "decode_tok_s_within_session_cv": _known(within),
        "decode_tok_s_min": spread.minimum,
        "decode_tok_s_max": spread.maximum,
        "decode_tok_s_ci95_low": level.ci_low,
        "decode_tok_s_ci95_high": level.ci_high,
        "decode_tok_s_median": spread.median,
        "engine_decode_tok_s_mean": engine_rate.mean,
        "ttft_ms_median": 1000 * describe([r.client.ttft_s for r in runs], intervals=False).median,
        "itl_ms_median": 1000 * describe([r.client.itl_median_s for r in runs], intervals=False).median,
        "drafted": spec.drafted if spec else None,
        "accepted": spec.accepted if spec else None,
        "verify_steps": spec.verify_steps if spec else None,
        "acceptance_rate": _known(spec.acceptance_rate) if spec else None,
        "accept_length": _known(spec.accept_length) if spec else None,
        "speculation_source": (spec.source or None) if spec else None,
        "text_matches_baseline": all(baseline_texts.get(r.prompt_index) == r.text_sha256 for r in runs)
        if runs
        else None,
    }
    for key in swept:
        # a swept env variable such as env:HF_TOKEN must not put its value into summary.csv
        value = parameter_value(configuration, key)
        row[key] = REDACTED if is_secret(key) and value is not None else value
    return row


def _known(value: float) -> float | None:
    return None if math.isnan(value) else value


def write_csv(frame: pd.DataFrame, path: str | Path) -> None:
    """Stable formatting (6 significant digits, fixed column order) so reruns are byte-identical."""
    with atomic_open(path, newline="") as handle:  # a killed job leaves no truncated CSV behind
        frame.to_csv(handle, index=False, float_format="%.6g", lineterminator="\n")


def warning_lines(frame: pd.DataFrame) -> list[str]:
    """The summary's warnings as console lines, plus which interval and test the numbers are."""
    units = frame["interval_unit"].dropna() if "interval_unit" in frame else pd.Series(dtype=str)
    unit = str(units.iloc[0]) if len(units) else "none"
    lines = [
        f"statistics: unit = {unit}; tok/s = decode tokens / decode time of a pass over the prompts; CIs = 95 % "
        f"t-intervals on the log scale with the pooled spread of the units; p = t-test against the baseline, "
        f"Holm-adjusted over the sweep's {_family_size(frame)} comparisons (raw p in speedup_p_value)"
    ]
    for name, text in zip(frame["configuration"], frame["warnings"], strict=True):
        lines += [f"WARNING {name}: {w}" for w in str(text).split("; ") if text and str(text) != "nan"]
    return lines


def _family_size(frame: pd.DataFrame) -> int:
    """The comparisons of the sweep's one Holm family (0 when none was tested)."""
    sizes = frame["comparisons"].dropna() if "comparisons" in frame else pd.Series(dtype=float)
    return int(sizes.max()) if len(sizes) else 0


# Per-request draft counts a log parser puts in profile.csv: (drafted column, accepted column).
LOG_DRAFT_COLUMNS = (("draft_generated", "draft_accepted"), ("drafted", "accepted"))


def fill_speculation_from_logs(frame: pd.DataFrame, profiles: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Where no response field or counter gave draft counts, take them from the server log's run rows.

    The least precise source: log lines are per request (llama.cpp ``draft acceptance``) or per
    logging interval (vLLM ``SpecDecoding metrics``), so interval lines may straddle runs.
    """
    frame = frame.copy()
    for index, row in frame.iterrows():
        profile = profiles.get(row["configuration"])
        if pd.notna(row["drafted"]) or profile is None or "phase" not in profile.columns:
            continue
        runs = profile[profile["phase"] == "run"]
        for drafted_column, accepted_column in LOG_DRAFT_COLUMNS:
            if {drafted_column, accepted_column} <= set(runs.columns):
                drafted = pd.to_numeric(runs[drafted_column], errors="coerce").sum()
                if drafted > 0:
                    accepted = pd.to_numeric(runs[accepted_column], errors="coerce").sum()
                    counts = speculation.SpeculationCounts(drafted=drafted, accepted=accepted, emitted=None)
                    frame.loc[index, ["drafted", "accepted", "acceptance_rate", "speculation_source"]] = [
                        drafted,
                        accepted,
                        counts.acceptance_rate,
                        "server log",
                    ]
                    break
        else:
            counts = _interval_draft_counts(profile[profile["phase"] == "interval"])
            if counts is not None:
                frame.loc[index, ["drafted", "accepted", "acceptance_rate", "speculation_source"]] = [
                    *counts,
                    counts[1] / counts[0],
                    "server log (logging intervals, warmup included)",
                ]
    return frame


def _interval_draft_counts(intervals: pd.DataFrame) -> tuple[float, float] | None:
    """Drafted and accepted tokens of a log with per-interval rows (vLLM): V1 ``SpecDecoding metrics`` lines
    count each interval (summed), V0 ``Speculative metrics`` lines count since start (the last is the total)."""
    if not {"line", "drafted", "accepted"} <= set(intervals.columns):
        return None
    for kind, total in (("spec_v1", "sum"), ("spec_v0", "max")):
        rows = intervals[intervals["line"] == kind]
        drafted = pd.to_numeric(rows["drafted"], errors="coerce").agg(total)
        if pd.notna(drafted) and drafted > 0:
            return float(drafted), float(pd.to_numeric(rows["accepted"], errors="coerce").agg(total))
    return None


def add_profile_columns(
    frame: pd.DataFrame, profiles: dict[str, pd.DataFrame], parsers: dict[str, dict[str, Any]]
) -> pd.DataFrame:
    """Per configuration, ``<parser>_<group>_mean``/``_median`` of each numeric column a user profile
    parser put in profile.csv (phase ``run`` rows only), and ``<parser>_rows``; appended at the end."""
    extra: dict[str, list[Any]] = {}
    for name in parsers:
        for configuration in frame["configuration"]:
            profile = profiles.get(configuration, pd.DataFrame())
            rows = (
                profile[(profile.get("source") == name) & (profile.get("phase") == "run")]
                if "source" in profile.columns
                else pd.DataFrame()
            )
            extra.setdefault(f"{name}_rows", []).append(len(rows))
        identifiers = set(parsers[name].get("identifiers", []))  # a cycle counter or rank is not averaged
        groups = [
            c
            for p in profiles.values()
            if "source" in p.columns
            for c in p.loc[p["source"] == name].dropna(axis=1, how="all").columns
            if c not in ("phase", "source", "run") and c not in identifiers
        ]
        for group in dict.fromkeys(groups):
            for configuration in frame["configuration"]:
                profile = profiles.get(configuration, pd.DataFrame())
                values = (
                    pd.to_numeric(
                        profile.loc[(profile["source"] == name) & (profile["phase"] == "run"), group], errors="coerce"
                    ).dropna()
                    if {"source", group} <= set(profile.columns)
                    else pd.Series(dtype=float)
                )
                extra.setdefault(f"{name}_{group}_mean", []).append(values.mean() if len(values) else None)
                extra.setdefault(f"{name}_{group}_median", []).append(values.median() if len(values) else None)
    return pd.concat([frame, pd.DataFrame(extra, index=frame.index)], axis=1) if extra else frame


def runs_range(summary: pd.DataFrame, dash: str = "\u2013") -> str:
    """Runs per measured configuration for captions: "5", or "3-10" (joined by ``dash``) when adaptive
    repetitions made them differ (the maximum alone would overstate the runs behind most rows)."""
    runs = summary.loc[summary["runs"] > 0, "runs"] if "runs" in summary else pd.Series(dtype=int)
    if runs.empty:
        return "0"
    low, high = int(runs.min()), int(runs.max())
    return str(high) if low == high else f"{low}{dash}{high}"
