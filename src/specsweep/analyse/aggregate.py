"""Aggregate per-run records into ``summary.csv``: one row per configuration.

Every column is described in ``COLUMNS`` (and docs/summary.md is checked against it).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from specsweep.analyse import energy, stats
from specsweep.analyse.stats import describe
from specsweep.measure import placement
from specsweep.measure.rate_check import kept_and_excluded
from specsweep.plan.config import Configuration, parameter_value, swept_parameters
from specsweep.plan.factors import baselines_by_configuration
from specsweep.record import speculation
from specsweep.record.atomic import atomic_open
from specsweep.record.redact import REDACTED, is_secret
from specsweep.record.results import Launch, Run

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
    "runs": "measured runs the statistics rest on",
    "runs_excluded": "runs kept on disk but left out of the statistics: the client's decode rate disagreed with "
    "the engine's own beyond benchmark.rate_tolerance_pct, or could not be timed",
    "tokens_per_run": "tokens generated in each run (all runs must equal benchmark.max_tokens)",
    "tok_s_mean": "client-measured decode throughput, mean over runs (tokens/s; first token excluded)",
    "tok_s_std": "sample standard deviation over runs (tokens/s)",
    "tok_s_cv": "coefficient of variation, std / mean",
    "tok_s_min": "slowest run (tokens/s)",
    "tok_s_max": "fastest run (tokens/s)",
    "tok_s_ci95_low": "95 % Student-t confidence interval of the mean, lower bound (NaN with < 3 runs)",
    "tok_s_ci95_high": "95 % Student-t confidence interval of the mean, upper bound",
    "tok_s_median": "median run (tokens/s)",
    "tok_s_boot95_low": "95 % percentile-bootstrap interval of the mean, lower bound (seeded; too narrow "
    "with few runs, so the t-interval is the one shown)",
    "tok_s_boot95_high": "95 % percentile-bootstrap interval of the mean, upper bound",
    "speedup": "tok_s_mean / the tok_s_mean of its baseline (compared_with)",
    "speedup_pct": "(speedup - 1) * 100",
    "speedup_ci95_low": "95 % Fieller confidence interval of the speedup (ratio of independent means), "
    "lower bound (NaN with < 3 runs or when unbounded)",
    "speedup_ci95_high": "95 % Fieller confidence interval of the speedup, upper bound",
    "speedup_boot95_low": "95 % percentile-bootstrap interval of the ratio of means, lower bound (seeded)",
    "speedup_boot95_high": "95 % percentile-bootstrap interval of the ratio of means, upper bound",
    "speedup_p_value": "two-sided Welch t-test p-value, this configuration's runs against the baseline's "
    "(unequal variances; compares means, which the speedup is a ratio of)",
    "significant": "true when speedup_p_value < 0.05 (empty for the baseline and when no test was possible)",
    "engine_tok_s_mean": "the engine's own decode throughput, mean over runs (llama.cpp predicted_per_second)",
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
    "warnings": "why not to trust the row at face value, '; '-separated: fewer than 3 runs, CV above "
    "10 %, a speedup CI that straddles 1, a profile parser that matched no line, measured on another node or "
    "GPU model than the baseline (empty when none)",
    **energy.SUMMARY_COLUMNS,  # energy per token, clocks, throttling, contention (analyse/energy.py)
}


def summarise(
    configurations: dict[str, Configuration], runs: dict[str, list[Run]], launches: dict[str, Launch]
) -> pd.DataFrame:
    """summary.csv's statistics columns from runs and launches (``summary_table`` adds the logs' columns)."""
    swept = swept_parameters(configurations)
    compared = baselines_by_configuration(configurations)
    excluded = {name: len(kept_and_excluded(records)[1]) for name, records in runs.items()}
    runs = {name: kept_and_excluded(records)[0] for name, records in runs.items()}
    rates = {c.name: [r.decode_tokens_per_s for r in runs.get(c.name, [])] for c in configurations.values()}
    throughput: dict[str, stats.Summary] = {}
    ratios: dict[str, stats.Ratio | None] = {}
    for reference in [name for name, against in compared.items() if against is None]:
        # each baseline with the configurations compared with it, at once (stats.describe_many)
        members = [name for name, against in compared.items() if reference in (name, against)]
        described = stats.describe_many([rates[name] for name in members], rates[reference])
        for name, (summary, speedup) in zip(members, described, strict=True):
            throughput[name], ratios[name] = summary, None if name == reference else speedup
    texts = {
        name: {r.prompt_index: r.text_sha256 for r in runs.get(name, [])}
        for name, against in compared.items()
        if against is None
    }
    rows = [
        _row(
            c, runs.get(c.name, []), launches.get(c.name), swept, texts[compared[c.name] or c.name], throughput[c.name]
        )
        for c in configurations.values()
    ]
    frame = pd.DataFrame(rows)
    frame["compared_with"] = [compared[name] for name in frame["configuration"]]
    means = dict(zip(frame["configuration"], frame["tok_s_mean"], strict=True))
    frame["speedup"] = [means[name] / means[compared[name] or name] for name in frame["configuration"]]
    frame["speedup_pct"] = (frame["speedup"] - 1.0) * 100.0
    for column, attribute in (
        ("speedup_ci95_low", "ci_low"),
        ("speedup_ci95_high", "ci_high"),
        ("speedup_boot95_low", "boot_low"),
        ("speedup_boot95_high", "boot_high"),
        ("speedup_p_value", "p_value"),
    ):
        frame[column] = [getattr(ratios[n], attribute) if ratios[n] else None for n in frame["configuration"]]
    frame["significant"] = [ratio.significant if (ratio := ratios[name]) else None for name in frame["configuration"]]
    frame["runs_excluded"] = [excluded.get(name, 0) for name in frame["configuration"]]
    # measured, but no run counts: say so rather than `missing`
    frame.loc[(frame["runs"] == 0) & (frame["runs_excluded"] > 0), "status"] = "excluded"
    where = {name: placement.of_launch(launch) for name, launch in launches.items() if launch}
    frame["warnings"] = [
        "; ".join(
            stats.warnings_for(throughput[name], ratios[name])
            + ([f"{excluded[name]} run(s) excluded: client and engine rates disagree"] if excluded.get(name) else [])
            + [
                w
                for w in [placement.cross_machine_warning(where.get(name, {}), where.get(compared[name] or name, {}))]
                if w
            ]
        )
        for name in frame["configuration"]
    ]
    ordered = [c for c in COLUMNS if c in frame.columns]
    ordered[ordered.index("status") + 1 : ordered.index("status") + 1] = swept
    return frame[ordered]


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
    measured: Measured, profile_parsers: dict[str, dict[str, Any]], statuses: dict[str, str] | None = None
) -> pd.DataFrame:
    """summary.csv: the one builder, for a finished sweep (the summary job) and an unfinished one (the
    ``onerror`` path, which passes each configuration's ``status``), so both have the same columns."""
    frame = summarise(measured.configurations, measured.runs, measured.launches)
    if statuses is not None:
        frame["status"] = frame["configuration"].map(statuses)
    if measured.log_warnings:
        frame = add_warnings(frame, measured.log_warnings)
    frame = fill_speculation_from_logs(frame, measured.profiles)
    frame, energy_warnings = energy.summary_columns(frame, measured.runs, measured.launches)
    frame = add_warnings(frame, energy_warnings)
    return add_profile_columns(frame, measured.profiles, profile_parsers)


# runs.csv, one row per measured run, in this column order (docs/runs.md gives the same table).
RUNS_COLUMNS: dict[str, str] = {
    "configuration": "configuration name (results/<configuration>/)",
    "run": "run index within the session, 0-based, in the order measured",
    "prompt_index": "0-based index of the prompt in benchmark.prompts (blank lines and # comments skipped): run i "
    "uses prompt i modulo the number of prompts, so one index is one text in every configuration",
    "category": "the prompt's category in the dataset (benchmark.prompts as JSONL; one category for a plain file)",
    "tokens": "tokens the engine generated (the prompt's max_tokens in a dataset, else benchmark.max_tokens)",
    "ttft_s": "time to first token as the client saw it (s)",
    "decode_s": "first to last content event (s)",
    "e2e_s": "request sent to response complete (s)",
    "decode_tokens_per_s": "client-measured decode throughput, (tokens - 1) / decode_s (the first token is TTFT's)",
    "itl_median_s": "median interval between content events (s); an event may carry several tokens",
    "itl_p90_s": "90th percentile of that interval (s)",
    "content_events": "stream events that carried generated text",
    "engine_tok_s": "the engine's own decode throughput for this request (llama.cpp timings.predicted_per_second; "
    "empty where the engine reports none)",
    "drafted": "draft tokens proposed during this run (empty without speculation, or when the engine did not "
    "report them)",
    "accepted": "draft tokens accepted during this run",
    "verify_steps": "verification steps during this run",
    "speculation_source": "where the counts came from: the response's own fields or Prometheus counter deltas "
    "around the run",
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


def runs_table(runs: dict[str, list[Run]]) -> pd.DataFrame:
    """runs.csv: per run, which prompt, the client's timings, the engine's own decode rate, the speculation
    counts (empty without speculation or when the engine did not report them) and why the run is left out
    of the statistics (empty when it counts)."""
    rows = [
        {
            "configuration": name,
            "run": r.run,
            "prompt_index": r.prompt_index,
            "category": r.category,
            "tokens": r.tokens,
            **asdict(r.client),
            "engine_tok_s": r.engine.get("timings", {}).get("predicted_per_second"),
            **(
                {
                    "drafted": r.speculation.drafted,
                    "accepted": r.speculation.accepted,
                    "verify_steps": r.speculation.verify_steps,
                    "speculation_source": r.speculation.source,
                }
                if r.speculation
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
    runs: list[Run],
    launch: Launch | None,
    swept: list[str],
    baseline_texts: dict[int, str],
    throughput: stats.Summary,
) -> dict[str, Any]:
    # Only means and medians of these: no bootstrap (it is most of describe's cost)
    engine_rate = describe([r.engine_tokens_per_s for r in runs], intervals=False)
    spec = speculation.total([r.speculation for r in runs if r.speculation])
    row: dict[str, Any] = {
        "configuration": configuration.name,
        "group": configuration.group,
        "engine": configuration.engine,
        "kind": configuration.kind,
        "engine_version": launch.engine_version if launch else None,
        "host": placement.of_launch(launch)["host"] if launch else None,
        "baseline": configuration.baseline,
        "status": "ok" if runs else "missing",
        "runs": throughput.n,
        "tokens_per_run": runs[0].tokens if runs else None,
        "tok_s_mean": throughput.mean,
        "tok_s_std": throughput.std,
        "tok_s_cv": throughput.cv,
        "tok_s_min": throughput.minimum,
        "tok_s_max": throughput.maximum,
        "tok_s_ci95_low": throughput.ci_low,
        "tok_s_ci95_high": throughput.ci_high,
        "tok_s_median": throughput.median,
        "tok_s_boot95_low": throughput.boot_low,
        "tok_s_boot95_high": throughput.boot_high,
        "engine_tok_s_mean": engine_rate.mean,
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
    lines = [
        f"statistics: tok/s CI = 95 % {stats.MEAN_CI_METHOD} interval of the mean; speedup CI = 95 % "
        f"{stats.SPEEDUP_CI_METHOD} interval of the ratio of means; p = {stats.TEST_METHOD} against the "
        f"baseline (bootstrap intervals in the *_boot95_* columns, seeded)"
    ]
    for name, text in zip(frame["configuration"], frame["warnings"], strict=True):
        lines += [f"WARNING {name}: {w}" for w in str(text).split("; ") if text and str(text) != "nan"]
    return lines


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
