"""Tables of the load levels and the prompt categories, from run and window records.

* ``requests.csv``: one row per request - every single-request run (load ``single``) and every
  request of every load window - with its latencies, tokens and speculation counts;
* ``load.csv``: one row per configuration and load level, from each window's steady interval
  (warmup windows left out) - output tok/s with its 95 % Student-t interval over the replicates, the
  speedup against the baseline's same replicates (paired: same prompts, same schedule), request
  throughput, goodput under the SLOs, vLLM's latency percentiles over requests with 95 % sectioning
  intervals over the replicates, speculation counts. The replicate is the session (server launch) as in
  summary.csv, each session's windows together; with one session, its windows (within-launch);
* ``categories.csv``: one row per configuration, load and prompt category - acceptance, accept
  length and the speedup against the baseline's same category. For single-request runs the speedup is
  the category's workload rate ratio with sessions as the replicates (analyse/replicates.py, the
  spread pooled over configurations and categories); at load, sessions too, each paired with the
  baseline's as in load.csv (windows of the one launch with one session).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd

from specsweep.analyse import energy, loadbest, schedule
from specsweep.analyse.latency import (
    PERCENTILES,
    SECTIONING_WINDOWS,
    TAIL_VALUES,
    RequestLatency,
    SteadyWindow,
    level_samples,
    meets_slo,
    request_latency,
    sectioned_percentiles,
    steady_part,
)
from specsweep.engines import adapter_class
from specsweep.maths import stats
from specsweep.plan.config import Configuration
from specsweep.plan.load_levels import CONCURRENCY, SINGLE
from specsweep.record.rates import PER_REQUEST_DECODE, SINGLE_REQUEST_DECODE, STEADY_OUTPUT
from specsweep.record.results import Run, Window, WindowRequest

LATENCIES = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")  # vLLM's metrics (docs/load.md)
WITHIN_LAUNCH = "window (within-launch)"  # load.csv's replicate with one session
# The methods of load.csv's intervals and test, named once for its column definitions, the report captions
# (tests/test_captions.py holds them to these) and the figures' axes.
SPEEDUP_INTERVAL = "paired Student-t"  # paired_speedup
SPEEDUP_TEST = "paired t-test"
PERCENTILE_INTERVAL = "sectioning"  # latency.sectioned_percentiles

LOAD_COLUMNS: dict[str, str] = {
    "configuration": "configuration name",
    "baseline": "true for the baseline configuration",
    "load": "load level: c<N> (closed loop, N requests in flight), r<R> (open loop, R requests/s) or "
    "ramp<S>-<E> (open loop rising from S to E requests/s)",
    "load_kind": "concurrency, request_rate or ramp_up",
    "load_value": "the level's concurrency or request rate (a ramp's end rate)",
    "replicate": "what the intervals and the speedup's pairs are over: session (benchmark.sessions >= 2: each "
    "session's windows averaged, session k paired with the baseline's session k) or, with one session, "
    f"'{WITHIN_LAUNCH}' (the windows of one launch: the intervals ignore launch-to-launch variation)",
    "sessions": "sessions (server launches) with windows at this level: the replicates with two or more, "
    "each paired with the baseline's same session",
    "windows": "measured windows over all sessions (the warmup window is in no table)",
    "requests": "requests over all windows",
    "requests_flagged": "requests whose engine-reported token count disagrees with their stream beyond what its "
    "events can carry (docs/load.md): in no other column",
    "steady_requests": "requests sent and ended within their window's steady interval, over all windows: "
    "the latency percentiles' sample",
    "steady_s_mean": "length of the steady interval (s), mean over windows",
    "output_tok_s_mean": f"{STEADY_OUTPUT.label}: tokens that arrived within the steady interval / its length, mean "
    "over the replicates (a session's: the mean over its windows)",
    "output_tok_s_ci95_low": "95 % Student-t interval of that mean over the replicates, lower bound (NaN with < 3)",
    "output_tok_s_ci95_high": "upper bound",
    "speedup": f"geometric mean over the replicates of the {STEADY_OUTPUT.name} / the baseline's same replicate (same "
    "prompts, same schedule; session k with session k)",
    "speedup_ci95_low": f"95 % {SPEEDUP_INTERVAL} interval of that ratio over the replicates (on the log scale), "
    "lower bound (NaN with < 2 pairs)",
    "speedup_ci95_high": "upper bound",
    "speedup_p_value": f"{SPEEDUP_TEST} of the replicates' log {STEADY_OUTPUT.name} against the baseline's same "
    "replicates",
    "speedup_p_holm": "speedup_p_value adjusted by Holm over every comparison of the load table (each configuration "
    "at each level: the sweep's question at load is one family)",
    "significant": "true when speedup_p_holm < 0.05, with two or more sessions (windows of one launch declare "
    "nothing); empty for the baseline and when no test was possible",
    "request_throughput_mean": "requests that ended within the steady interval / its length, mean over windows "
    "(requests/s)",
    "goodput_mean": "of those, the requests that met every benchmark.load.slo objective / the interval's length, "
    "mean over the replicates (requests/s; all requests when no SLO is set)",
    "goodput_ci95_low": "95 % Student-t interval of the goodput over the replicates, lower bound (NaN with < 3)",
    "goodput_ci95_high": "upper bound",
    "slo_met_pct": "share of the steady requests that met every objective (%)",
    "decode_tok_s_mean": f"{PER_REQUEST_DECODE.label}: 1 / TPOT, mean over the steady requests",
    **{
        f"{metric}_p{q}{suffix}": f"{what} over the steady requests, {q}th percentile{note}"
        for metric, what in (
            ("ttft_ms", "TTFT, send to first token (ms)"),
            ("tpot_ms", "TPOT, (E2EL - TTFT) / (tokens - 1) (ms)"),
            ("itl_ms", "ITL, gap between token-carrying events (ms)"),
            ("e2el_ms", "E2EL, send to last token (ms)"),
        )
        for q in PERCENTILES
        for suffix, note in (
            ("", " (numpy's linear rule, as vLLM)"),
            ("_low", f": 95 % {PERCENTILE_INTERVAL} interval over the replicates, lower bound (NaN with < 2)"),
            ("_high", ": upper bound"),
        )
    },
    "approximate_intervals": f"percentile columns whose interval is approximate (fewer than {SECTIONING_WINDOWS} "
    f"replicates, or a replicate with fewer than {TAIL_VALUES} steady values beyond the percentile), space-separated",
    "drafted": "draft tokens proposed: the responses' counts summed over requests, else the engine's counters "
    "(window totals; vLLM)",
    "accepted": "draft tokens accepted, from the same source",
    "acceptance_rate": "accepted / drafted",
    "verify_steps": "verification steps over the windows (engine counters, window totals)",
    "accept_length": "1 + accepted / verify_steps (tokens per verify step, bonus included)",
    "text_matches_baseline": "true when every request's text equals the baseline's same request",
    **energy.LOAD_COLUMNS,  # energy per token, clocks, throttling, contention per level (analyse/energy.py)
    **loadbest.COLUMNS,  # the best setting per level (analyse/loadbest.py)
}


REQUEST_COLUMNS: dict[str, str] = {
    "configuration": "configuration name",
    "load": "single (a single-request run, idle server) or the load level of the window",
    "window": "run index (single) or window index",
    "request": "request index within the window (0 for a single-request run)",
    "prompt_index": "line of benchmark.prompts the request used (0-based, comments and blanks skipped)",
    "category": "prompt category of the dataset",
    "tokens": "tokens generated, as the engine counted them",
    "flagged": "why that count disagrees with the stream (empty when it agrees): such a request is in no other table",
    "sent_ms": "when the request was sent, milliseconds after its window started",
    "steady": "true when the request was sent and ended within its window's steady interval (empty for single runs)",
    "ttft_ms": "time to first token (ms)",
    "tpot_ms": "decode time per output token, first token excluded (ms)",
    "e2e_ms": "send to end of the response (ms)",
    "decode_tok_s": "as the client saw it, (tokens - 1) / decode time: the "
    f"{SINGLE_REQUEST_DECODE.name} (load single), else the {PER_REQUEST_DECODE.name}",
    "engine_decode_tok_s": "the engine's own per-request decode rate (llama.cpp predicted_per_second)",
    "drafted": "draft tokens proposed for this request, as the response reported them",
    "accepted": "draft tokens accepted for this request",
    "verify_steps": "verify steps of a single-request run (engine counters); empty under load",
    "meets_slo": "true when the request met every benchmark.load.slo objective (empty for single runs)",
    "text_sha256": "sha256 of the generated text",
}


def request_rows(
    configurations: dict[str, Configuration],
    runs: dict[str, list[Run]],
    windows: dict[str, list[Window]],
    slo: dict[str, float],
) -> pd.DataFrame:
    """Every single-request run and every window request as one row each."""
    rows: list[dict[str, Any]] = []
    for name in configurations:
        # a run the session excluded (its client and engine rates disagree) is out of every table, as in summary.csv
        for run in sorted((r for r in runs.get(name, []) if not r.excluded), key=lambda r: r.run):
            client, spec, tokens = run.client, run.speculation, run.tokens
            tpot = client.decode_s / (tokens - 1) if tokens > 1 and client.decode_s > 0 else math.nan
            rows.append(
                {
                    "configuration": name,
                    "load": SINGLE,
                    "window": run.run,
                    "request": 0,
                    "prompt_index": run.prompt_index,
                    "category": run.category,
                    "tokens": tokens,
                    "flagged": None,  # a flagged run is excluded (rate_check)
                    "sent_ms": 0.0,
                    "steady": None,
                    "ttft_ms": 1000 * client.ttft_s,
                    "tpot_ms": 1000 * tpot,
                    "e2e_ms": 1000 * client.e2e_s,
                    "decode_tok_s": client.decode_tokens_per_s,
                    "engine_decode_tok_s": run.engine_tokens_per_s,
                    "drafted": spec.drafted if spec else None,
                    "accepted": spec.accepted if spec else None,
                    "verify_steps": spec.verify_steps if spec else None,
                    "meets_slo": None,
                    "text_sha256": run.text_sha256,
                }
            )
        for window in sorted(measured(windows.get(name, [])), key=lambda w: (w.label, w.window)):
            for request in window.requests:
                latency = _latency(request)
                rows.append(
                    {
                        "configuration": name,
                        "load": window.label,
                        "window": window.window,
                        "request": request.index,
                        "prompt_index": request.prompt_index,
                        "category": request.category,
                        "tokens": request.tokens,
                        "flagged": request.flagged,
                        "sent_ms": 1000.0 * request.sent_s,
                        "steady": window.in_steady(request),
                        "ttft_ms": 1000 * latency.ttft_s,
                        "tpot_ms": 1000 * latency.tpot_s,
                        "e2e_ms": 1000 * latency.e2e_s,
                        "decode_tok_s": latency.decode_tokens_per_s,
                        "engine_decode_tok_s": request.engine_decode_tok_s,
                        "drafted": request.drafted,
                        "accepted": request.accepted,
                        "verify_steps": None,
                        "meets_slo": meets_slo(latency, slo),
                        "text_sha256": request.text_sha256,
                    }
                )
    return pd.DataFrame(rows, columns=list(REQUEST_COLUMNS))


def _latency(request: WindowRequest) -> RequestLatency:
    return request_latency(request.arrivals_us, request.tokens, request.e2e_s)


def measured(records: list[Window]) -> list[Window]:
    """The windows the tables use: every warmup window left out."""
    return [w for w in records if not w.warmup]


def load_table(
    configurations: dict[str, Configuration],
    windows: dict[str, list[Window]],
    slo: dict[str, float],
    equivalence_pct: float = 3.0,
) -> pd.DataFrame:
    """One row per configuration and load level (see LOAD_COLUMNS); ``configurations`` with their further
    sessions (benchmark.sessions), ``windows`` by session."""
    from specsweep.plan import design

    sessions = design.sessions_of(configurations)
    measured_ = design.measured_configurations(configurations)
    baseline = next(c.name for c in measured_.values() if c.baseline)
    levels = {w.label: w.level for records in windows.values() for w in measured(records)}
    rows = []
    rates: dict[str, dict[str, dict[tuple[int, int], float]]] = {}
    for label, level in sorted(levels.items(), key=lambda item: (item[1]["kind"] != CONCURRENCY, item[1]["value"])):
        at_level = {
            name: _units([session_windows(windows.get(session, []), label) for session in names])
            for name, names in sessions.items()
        }
        reference = {key: _mean_rate(unit) for key, unit in at_level[baseline].items()}
        rates[label] = {name: {key: _mean_rate(unit) for key, unit in at_level[name].items()} for name in measured_}
        reference_texts = _texts([p.window for unit in at_level[baseline].values() for p in unit])
        for name, configuration in measured_.items():
            rows.append(_level_row(configuration, level, at_level[name], reference, reference_texts, slo))
    frame = loadbest.with_verdicts(with_verdicts(pd.DataFrame(rows)), rates, equivalence_pct)
    return frame[[c for c in LOAD_COLUMNS if c in frame.columns]]


def with_verdicts(frame: pd.DataFrame) -> pd.DataFrame:
    """speedup_p_holm and significant: Holm over every tested row at once. Per level or per configuration the
    family would be one comparison each, and an A/A sweep with k rows would call one of them different in up
    to 1 - 0.95^k of sweeps; windows of one launch (replicate 'window') test nothing across launches."""
    frame = frame.copy()
    p = pd.to_numeric(frame.get("speedup_p_value"), errors="coerce")
    across = frame.get("replicate", pd.Series("", index=frame.index)) != WITHIN_LAUNCH
    tested = p.notna() & ~frame["baseline"].astype(bool)
    frame["speedup_p_holm"] = pd.Series(np.nan, index=frame.index, dtype=float)
    frame.loc[tested, "speedup_p_holm"] = stats.holm(p[tested].tolist())
    frame["significant"] = pd.Series(pd.NA, index=frame.index, dtype="boolean")
    judged = tested & across
    frame.loc[judged, "significant"] = frame.loc[judged, "speedup_p_holm"] < 0.05
    return frame


def session_windows(records: list[Window], label: str) -> list[SteadyWindow]:
    """A session's measured windows at one level, in window order, as their steady parts: the windows of its
    replicate in load.csv."""
    return [steady_part(w) for w in sorted((w for w in measured(records) if w.label == label), key=lambda w: w.window)]


def session_rate(records: list[Window], label: str) -> float:
    """A session's replicate rate at one level, as load.csv's intervals and speedups take it: its steady output
    tok/s, the mean over its windows there (NaN without any)."""
    parts = session_windows(records, label)
    return _mean_rate(parts) if parts else math.nan


def _units(by_session: list[list[SteadyWindow]]) -> dict[tuple[int, int], list[SteadyWindow]]:
    """The replicates of a level's intervals, keyed for pairing with the baseline's: the sessions (server
    launches, session k with the baseline's session k, measured in the same round) where two or more have
    windows, each unit its windows; with one session, its windows (within-launch: the intervals then ignore
    launch-to-launch variation, as summary.csv's do with one session)."""
    found = [(k, parts) for k, parts in enumerate(by_session) if parts]
    if len(found) >= 2:
        return {(k, 0): parts for k, parts in found}
    return {(k, p.window.window): [p] for k, parts in found for p in parts}


def _mean_rate(unit: list[SteadyWindow]) -> float:
    """A unit's steady output tok/s: the mean over its windows."""
    return float(np.mean([p.output_tokens_per_s for p in unit]))


def _texts(records: list[Window]) -> dict[tuple[int, int], str]:
    return {(w.window, r.index): r.text_sha256 for w in records for r in w.requests}


@dataclass(frozen=True)
class PairedRatio:
    ratio: float
    low: float
    high: float
    p_value: float


def paired_speedup(candidate: dict[Any, float], reference: dict[Any, float]) -> PairedRatio:
    """Units (sessions, or windows of one session) of a configuration against the baseline's same units (same
    prompts, same schedule, same round): the geometric mean of the per-unit ratios, a Student-t interval on
    the log scale and its paired t-test."""
    pairs = [(candidate[w], reference[w]) for w in sorted(candidate.keys() & reference.keys())]
    logs = np.array([math.log(x / y) for x, y in pairs if x > 0 and y > 0])
    if logs.size == 0:
        return PairedRatio(*[math.nan] * 4)
    mean = float(logs.mean())
    if logs.size < 2:
        return PairedRatio(math.exp(mean), math.nan, math.nan, math.nan)
    se = float(logs.std(ddof=1)) / math.sqrt(logs.size)
    half = stats.t_critical(logs.size - 1) * se
    if se == 0:
        p_value = math.nan if mean == 0 else 0.0
    else:
        from scipy.stats import t as student_t  # seconds to import: only where a load table is made

        p_value = float(2 * student_t.sf(abs(mean / se), logs.size - 1))
    return PairedRatio(math.exp(mean), math.exp(mean - half), math.exp(mean + half), p_value)


def _level_row(
    configuration: Configuration,
    level: dict[str, Any],
    units: dict[tuple[int, int], list[SteadyWindow]],
    reference: dict[tuple[int, int], float],
    reference_texts: dict[tuple[int, int], str],
    slo: dict[str, float],
) -> dict[str, Any]:
    parts = [p for unit in units.values() for p in unit]
    records = [p.window for p in parts]
    sessions = len({session for session, _ in units})
    throughput = stats.describe([_mean_rate(unit) for unit in units.values()])
    speedup = paired_speedup({key: _mean_rate(unit) for key, unit in units.items()}, reference)
    requests = [r for w in records for r in w.requests]
    steady = [x for p in parts for _, x in p.requests]
    goodput = stats.describe(
        [float(np.mean([p.rate(sum(meets_slo(x, slo) for _, x in p.ended)) for p in unit])) for unit in units.values()]
    )
    row: dict[str, Any] = {
        "configuration": configuration.name,
        "baseline": configuration.baseline,
        "load": level["label"],
        "load_kind": level["kind"],
        "load_value": level["value"],
        "replicate": "session" if sessions > 1 else WITHIN_LAUNCH,
        "sessions": sessions,
        "windows": len(records),
        "requests": len(requests),
        "requests_flagged": sum(bool(r.flagged) for r in requests),
        "steady_requests": len(steady),
        "steady_s_mean": float(np.mean([p.duration_s for p in parts])) if parts else None,
        "output_tok_s_mean": throughput.mean,
        "output_tok_s_ci95_low": throughput.ci_low,
        "output_tok_s_ci95_high": throughput.ci_high,
        "speedup": None if configuration.baseline else speedup.ratio,
        "speedup_ci95_low": None if configuration.baseline else speedup.low,
        "speedup_ci95_high": None if configuration.baseline else speedup.high,
        "speedup_p_value": None if configuration.baseline else speedup.p_value,
        "request_throughput_mean": float(np.mean([p.rate(len(p.ended)) for p in parts])) if parts else None,
        "goodput_mean": goodput.mean,
        "goodput_ci95_low": goodput.ci_low,
        "goodput_ci95_high": goodput.ci_high,
        "slo_met_pct": 100 * sum(meets_slo(x, slo) for x in steady) / len(steady) if steady else None,
        "decode_tok_s_mean": float(np.nanmean([x.decode_tokens_per_s for x in steady])) if steady else None,
    }
    approximate = []
    # sections of the percentile intervals: the units (a session's windows pooled, or one window)
    per_unit = [level_samples(unit) for unit in units.values()]
    for metric in LATENCIES:
        sections = [np.concatenate(samples[metric]) for samples in per_unit]
        for q, found in zip(PERCENTILES, sectioned_percentiles(sections), strict=True):
            column = f"{metric}_p{q}"
            row[column], row[f"{column}_low"], row[f"{column}_high"] = (
                1000 * found.value,
                1000 * found.low,
                1000 * found.high,
            )
            if found.approximate:
                approximate.append(column)
    row["approximate_intervals"] = " ".join(approximate)
    row.update(_speculation(configuration.kind, requests, records))
    row.update(energy.window_columns(records))
    row["text_matches_baseline"] = (
        all(reference_texts.get((w.window, r.index)) == r.text_sha256 for w in records for r in w.requests)
        if requests
        else None
    )
    return row


def _speculation(kind: str, requests: list[WindowRequest], records: list[Window]) -> dict[str, Any]:
    """The responses' per-request counts (llama.cpp, vLLM 0.33's per-request metrics), else the engine's counter
    deltas of the windows as the ``kind``'s adapter reads them (vLLM's; SGLang's say none), which cover the same
    requests; None only when neither has counts (no speculation), 0 when a speculative server drafted nothing."""
    window_speculation = adapter_class(kind).window_speculation
    # a window whose counters fell (the engine restarted or reset them) gives impossible counts: refused
    counted = [c for w in records if (c := window_speculation(w.counter_delta)) and c.impossible is None]
    steps = sum(c.verify_steps or 0 for c in counted)
    if any(r.drafted is not None for r in requests):
        drafted, accepted = sum(r.drafted or 0 for r in requests), sum(r.accepted or 0 for r in requests)
    elif counted:
        drafted, accepted = sum(c.drafted for c in counted), sum(c.accepted for c in counted)
    else:
        drafted = accepted = None
    return {
        "drafted": drafted,
        "accepted": accepted,
        "acceptance_rate": accepted / drafted if drafted else None,
        "verify_steps": steps or None,
        "accept_length": 1 + accepted / steps if steps and drafted else None,
    }


CATEGORY_COLUMNS: dict[str, str] = {
    "configuration": "configuration name (every session of it pooled)",
    "baseline": "true for the baseline configuration",
    "load": "single (one request at a time, idle server) or the load level of the windows",
    "category": "prompt category of the dataset (benchmark.prompts)",
    "requests": "requests of this category",
    "units": "the replicates of the speedup interval: sessions (passes with one session: single; windows with one "
    "session: load)",
    "decode_tok_s_mean": f"single: the category's {SINGLE_REQUEST_DECODE.label} (decode tokens / decode time of its "
    f"prompts), geometric mean over the units; load: the {PER_REQUEST_DECODE.name}, mean over the category's requests",
    "speedup": "single: decode_tok_s_mean / the baseline's for the same category (over the prompts both "
    "measured); load: the geometric mean of the per-unit ratios of the mean per-request decode rate, each unit "
    "paired with the baseline's (as load.csv's speedup)",
    "speedup_ci95_low": "95 % interval of the speedup, lower bound (log scale, units as replicates: single, the "
    "pooled spread; load, paired Student-t); empty when the cell is too small (see note)",
    "speedup_ci95_high": "upper bound",
    "note": "why a cell has no interval (too few units), or the caveat of its interval (empty when none)",
    "drafted": "draft tokens proposed (sum over the category's requests)",
    "accepted": "draft tokens accepted",
    "acceptance_rate": "accepted / drafted",
    "accept_length": "1 + accepted / verify_steps where the engine gave verify steps per request "
    "(single-request runs), else empty",
}


def category_table(
    configurations: dict[str, Configuration], requests: pd.DataFrame, runs: dict[str, list[Run]] | None = None
) -> pd.DataFrame:
    """One row per configuration, load and category (see CATEGORY_COLUMNS); ``runs`` (by session) give the
    single-request rows their session-level statistics."""
    from specsweep.analyse import replicates
    from specsweep.plan import design

    sessions = design.sessions_of(configurations)
    measured = design.measured_configurations(configurations)
    baseline = next(c.name for c in measured.values() if c.baseline)
    of = {s: name for name, names in sessions.items() for s in names}
    rows = []
    if requests.empty:
        return pd.DataFrame(columns=list(CATEGORY_COLUMNS))
    requests = requests[requests["flagged"].isna()]  # a count that disagrees with its stream is in no table
    requests = requests.assign(
        session=requests["configuration"], configuration=requests["configuration"].map(lambda n: of.get(n, n))
    )
    by_category: dict[str, dict[str, list[list[Run]]]] = {}
    by_session: dict[str, list[list[Run]]] = {}
    for name, names in sessions.items():
        for session in names:
            kept = [r for r in (runs or {}).get(session, []) if not r.excluded]
            by_session.setdefault(name, []).append(kept)
            for category in dict.fromkeys(r.category for r in kept):
                found = [r for r in kept if r.category == category]
                by_category.setdefault(category, {}).setdefault(name, []).append(found)
    model = _category_model(by_session, by_category)
    for (load, category), group in requests.groupby(["load", "category"], sort=False):
        # load: each replicate (a session; with one session, a window) paired with the baseline's, as load.csv's
        reference = _load_units(group[group["configuration"] == baseline], sessions.get(baseline, [baseline]))
        cells = by_category.get(category, {}) if load == SINGLE else {}
        for name, configuration in measured.items():
            mine = group[group["configuration"] == name]
            rates = mine["decode_tok_s"].tolist()
            if load == SINGLE and name in cells:
                level = replicates.level(cells[name], model)
                units, mean = level.n, level.rate
                compared = replicates.compare(cells[name], cells[baseline], model) if baseline in cells else None
                ratio, low, high = (compared.ratio, compared.ci_low, compared.ci_high) if compared else (math.nan,) * 3
                note = model.note if model.note or not math.isnan(low) else "too few units for an interval"
            else:
                mean = float(np.nanmean(rates)) if len(rates) else math.nan
                found = _load_units(mine, sessions.get(name, [name]))
                units = len(found)
                speedup = paired_speedup(found, reference)
                ratio, low, high = speedup.ratio, speedup.low, speedup.high
                within = len({k for k, _ in found}) < 2
                note = "too few units for an interval" if math.isnan(low) else (_WITHIN_NOTE if within else "")
            drafted = _total(mine["drafted"])
            accepted = _total(mine["accepted"])
            steps = _total(mine["verify_steps"])
            rows.append(
                {
                    "configuration": name,
                    "baseline": configuration.baseline,
                    "load": load,
                    "category": category,
                    "requests": len(mine),
                    "units": units,
                    "decode_tok_s_mean": mean,
                    "speedup": None if configuration.baseline else ratio,
                    "speedup_ci95_low": None if configuration.baseline else low,
                    "speedup_ci95_high": None if configuration.baseline else high,
                    "note": None if configuration.baseline else (note or None),
                    "drafted": drafted,
                    "accepted": accepted if drafted is not None else None,
                    "acceptance_rate": accepted / drafted if drafted else None,
                    "accept_length": 1 + accepted / steps if steps and drafted else None,
                }
            )
    return pd.DataFrame(rows, columns=list(CATEGORY_COLUMNS))


_WITHIN_NOTE = f"replicate {WITHIN_LAUNCH}: launch-to-launch variation not measured (benchmark.sessions >= 2)"


def _load_units(requests: pd.DataFrame, sessions: list[str]) -> dict[tuple[int, int], float]:
    """A category's replicates at one load level, keyed as load.csv's (``_units``): each session's mean
    per-request decode rate where two or more sessions have requests, else the windows of the one session."""
    found = [(k, rows) for k, session in enumerate(sessions) if len(rows := requests[requests["session"] == session])]
    if len(found) >= 2:
        return {(k, 0): float(rows["decode_tok_s"].mean()) for k, rows in found}
    return {(k, int(w)): float(part["decode_tok_s"].mean()) for k, rows in found for w, part in rows.groupby("window")}


def _category_model(by_session: dict[str, list[list[Run]]], by_category: dict[str, dict[str, list[list[Run]]]]) -> Any:
    """The replicate model of the per-category speedups: with sessions, the two-way session x category
    layout (replicates.category_spread: a launch moves every category alike); with one session per
    configuration, passes as replicates, pooled over the (configuration, category) cells."""
    from specsweep.analyse import replicates

    whole = replicates.pooled(by_session)
    if whole.unit == replicates.SESSION:
        categories = list(by_category)
        matrices = []
        for sessions in by_session.values():
            full = [s for s in sessions if {r.category for r in s} >= set(categories)]
            rates = [[replicates.workload_rate([r for r in s if r.category == c]) for c in categories] for s in full]
            if len(full) >= 2:
                matrices.append(np.log(np.asarray(rates, dtype=float)))
        sd, df = replicates.category_spread(matrices)
        if df:
            return replicates.Pooled(replicates.SESSION, sd, df)
    return replicates.pooled({f"{n}/{c}": v for c, cells in by_category.items() for n, v in cells.items()})


def _total(values: pd.Series) -> float | None:
    known = pd.to_numeric(values, errors="coerce").dropna()
    return float(known.sum()) if len(known) else None


@dataclass(frozen=True)
class Crossover:
    """Two measured levels between which the speedup crosses 1: its 95 % interval lies on one side of 1 at
    ``before`` and on the other at ``after``, and at no level in between on either side alone."""

    before: float
    after: float
    falling: bool  # above 1 at ``before``, below at ``after``


def crossover(
    levels: Sequence[float],
    lows: Sequence[float],
    highs: Sequence[float],
    significant: Sequence[Any] | None = None,
) -> Crossover | None:
    """The first bracket of measured levels, in increasing load, whose speedup intervals exclude 1 on
    opposite sides; None when the intervals never do (levels whose interval holds 1 widen the bracket).
    With ``significant`` (load.csv's Holm verdicts), a level takes a side only where it is significant."""
    verdicts = list(significant) if significant is not None else [True] * len(levels)
    side_at = []
    for x, low, high, verdict in sorted(zip(levels, lows, highs, verdicts, strict=True)):
        side = 1 if low > 1.0 else -1 if high < 1.0 else 0  # NaN compares False: no side
        side_at.append((x, side if verdict is True or verdict == 1 else 0))
    last: tuple[float, int] | None = None
    for x, side in side_at:
        if side == 0:
            continue
        if last is not None and side != last[1]:
            return Crossover(last[0], x, falling=last[1] > 0)
        last = (x, side)
    return None


def crossover_lines(table: pd.DataFrame) -> list[str]:
    """One line per speculative configuration and load kind: between which levels its speedup crosses 1."""
    lines = []
    for (name, kind), group in table[~table["baseline"].astype(bool)].groupby(
        ["configuration", "load_kind"], sort=False
    ):
        unit = "concurrency" if kind == CONCURRENCY else "requests/s"
        levels = group["load_value"].astype(float).tolist()
        lows = group["speedup_ci95_low"].astype(float).tolist()
        highs = group["speedup_ci95_high"].astype(float).tolist()
        verdicts = verdicts_of(group)
        found = crossover(levels, lows, highs, verdicts)
        if found is not None:
            above, below = (found.before, found.after) if found.falling else (found.after, found.before)
            lines.append(
                f"{name}: speedup above 1 at {unit} {above:g} and below 1 at {below:g} (95 % intervals exclude 1 "
                f"on both sides): it crosses 1 between {unit} {found.before:g} and {found.after:g}"
            )
            continue
        sides = {
            x: _side(lo, hi, verdict) for x, lo, hi, verdict in sorted(zip(levels, lows, highs, verdicts, strict=True))
        }
        shown = ", ".join(f"{x:g}: {side}" for x, side in sides.items())
        lines.append(f"{name}: no crossover resolved at {unit} {shown}")
    return lines


def _side(low: float, high: float, verdict: bool | None) -> str:
    """A level's speedup as the crossover line says it: its interval against 1, and its verdict."""
    if not low > 1 and not high < 1:
        return "interval holds 1"
    if verdict is None:
        return "not judged (one launch)"
    if not verdict:
        return "not significant after Holm"
    return "above 1" if low > 1 else "below 1"


def verdicts_of(group: pd.DataFrame) -> list[Any]:
    """load.csv's significant column as True/False/None per row; every row True for a table written before it
    (the intervals alone decide there, as they did)."""
    if "significant" not in group:
        return [True] * len(group)
    return [None if pd.isna(v) else v in (True, "True", 1) for v in group["significant"]]


def write_tables(
    configurations: dict[str, Configuration],
    runs: dict[str, list[Run]],
    windows: dict[str, list[Window]],
    slo: dict[str, float],
    outputs: dict[str, str],
    progress: TextIO,
    equivalence_pct: float = 3.0,
) -> None:
    """The load_tables job: requests.csv and categories.csv, and load.csv when ``outputs`` names one."""
    from specsweep.analyse.aggregate import write_csv

    requests = request_rows(configurations, runs, windows, slo)
    write_csv(requests, Path(outputs["requests"]))
    categories = category_table(configurations, requests, runs)
    write_csv(categories, Path(outputs["categories"]))
    shown = categories[~categories["baseline"].astype(bool)]
    print(
        shown[
            ["configuration", "load", "category", "requests", "acceptance_rate", "accept_length", "speedup"]
        ].to_string(index=False),
        file=progress,
    )
    if "load" in outputs:
        # one row per configuration, its sessions (benchmark.sessions) as the replicates
        table = load_table(configurations, windows, slo, equivalence_pct)
        write_csv(table, Path(outputs["load"]))
        print(
            table[
                [
                    "configuration",
                    "load",
                    "windows",
                    "steady_requests",
                    "output_tok_s_mean",
                    "speedup",
                    "speedup_ci95_low",
                    "speedup_ci95_high",
                    "significant",
                    "tpot_ms_p50",
                    "ttft_ms_p90",
                    "goodput_mean",
                    "acceptance_rate",
                ]
            ].to_string(index=False),
            file=progress,
        )
        found = schedule.write(table, configurations, outputs["schedule"]) if "schedule" in outputs else []
        for line in (
            crossover_lines(table) + loadbest.lines(table.to_dict("records")) + found + energy.contended_levels(table)
        ):
            print(line, file=progress)
