"""Tables of the load levels and the prompt categories, from run and window records.

* ``requests.csv``: one row per request - every single-request run (load ``single``) and every
  request of every load window - with its latencies, tokens and speculation counts;
* ``load.csv``: one row per configuration and load level - output tok/s over windows with its
  95 % Student-t interval, the speedup against the baseline at the same level (Fieller interval,
  Welch p), request throughput, goodput under the SLOs, latency percentiles over requests with
  95 % bootstrap intervals over windows, speculation counts;
* ``categories.csv``: one row per configuration, load and prompt category - acceptance, accept
  length and the speedup of the per-request decode rate against the baseline's same category.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd

from specsweep.analyse import energy, stats
from specsweep.analyse.latency import PERCENTILES, RequestLatency, meets_slo, pooled_percentiles, request_latency
from specsweep.engines.openai import counter_speculation
from specsweep.plan.config import Configuration
from specsweep.plan.load_levels import CONCURRENCY
from specsweep.record.results import Run, Window, WindowRequest

SINGLE = "single"  # the load label of the single-request runs (an idle server, one request at a time)
LATENCIES = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")

LOAD_COLUMNS: dict[str, str] = {
    "configuration": "configuration name",
    "baseline": "true for the baseline configuration",
    "load": "load level: c<N> (closed loop, N requests in flight) or r<R> (open loop, R requests/s Poisson)",
    "load_kind": "concurrency or request_rate",
    "load_value": "the level's concurrency or request rate",
    "windows": "measured windows (the repetitions)",
    "requests": "requests over all windows",
    "output_tok_s_mean": "generated tokens / window duration (first send to last end), mean over windows",
    "output_tok_s_ci95_low": "95 % Student-t interval of that mean over windows, lower bound (NaN with < 3)",
    "output_tok_s_ci95_high": "upper bound",
    "speedup": "output_tok_s_mean / the baseline's at the same load level",
    "speedup_ci95_low": "95 % Fieller interval of the speedup over windows, lower bound",
    "speedup_ci95_high": "upper bound",
    "speedup_p_value": "Welch t-test of the windows' output tok/s against the baseline's at the same level",
    "request_throughput_mean": "requests / window duration, mean over windows (requests/s)",
    "goodput_mean": "requests that met every benchmark.load.slo objective / window duration, mean over "
    "windows (requests/s; all requests when no SLO is set)",
    "goodput_ci95_low": "95 % Student-t interval of the goodput over windows, lower bound",
    "goodput_ci95_high": "upper bound",
    "slo_met_pct": "share of requests that met every objective (%)",
    "decode_tok_s_mean": "per-request decode rate 1 / TPOT, mean over requests",
    **{
        f"{metric}_p{q}{suffix}": f"{what} over requests, {q}th percentile{note}"
        for metric, what in (
            ("ttft_ms", "time to first token (ms)"),
            ("tpot_ms", "decode time per output token, first token excluded (ms)"),
            ("itl_ms", "gap between token-carrying events (ms)"),
            ("e2e_ms", "end-to-end latency, send to end of response (ms)"),
        )
        for q in PERCENTILES
        for suffix, note in (
            ("", ""),
            ("_low", ": 95 % bootstrap interval over windows, lower bound"),
            ("_high", ": upper bound"),
        )
    },
    "drafted": "draft tokens proposed, from the responses (sum over requests)",
    "accepted": "draft tokens accepted, from the responses",
    "acceptance_rate": "accepted / drafted",
    "verify_steps": "verification steps over the windows (engine counters, window totals)",
    "accept_length": "1 + accepted / verify_steps (tokens per verify step, bonus included)",
    "text_matches_baseline": "true when every request's text equals the baseline's same request",
    **energy.LOAD_COLUMNS,  # energy per token, clocks, throttling, contention per level (analyse/energy.py)
}


REQUEST_COLUMNS: dict[str, str] = {
    "configuration": "configuration name",
    "load": "single (a single-request run, idle server) or the load level of the window",
    "window": "run index (single) or window index",
    "request": "request index within the window (0 for a single-request run)",
    "prompt_index": "line of benchmark.prompts the request used (0-based, comments and blanks skipped)",
    "category": "prompt category of the dataset",
    "tokens": "tokens generated",
    "sent_s": "when the request was sent, seconds after its window started",
    "ttft_ms": "time to first token (ms)",
    "tpot_ms": "decode time per output token, first token excluded (ms)",
    "e2e_ms": "send to end of the response (ms)",
    "decode_tok_s": "per-request decode rate as the client saw it, (tokens - 1) / decode time",
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
                    "sent_s": 0.0,
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
        for window in sorted(windows.get(name, []), key=lambda w: (w.label, w.window)):
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
                        "sent_s": request.sent_s,
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


def load_table(
    configurations: dict[str, Configuration], windows: dict[str, list[Window]], slo: dict[str, float]
) -> pd.DataFrame:
    """One row per configuration and load level (see LOAD_COLUMNS)."""
    baseline = next(c.name for c in configurations.values() if c.baseline)
    levels = {w.label: w.level for records in windows.values() for w in records}
    rows = []
    for label, level in sorted(levels.items(), key=lambda item: (item[1]["kind"] != CONCURRENCY, item[1]["value"])):
        at_level = {
            name: sorted((w for w in windows.get(name, []) if w.label == label), key=lambda w: w.window)
            for name in configurations
        }
        reference = [w.output_tokens_per_s for w in at_level[baseline]]
        reference_texts = _texts(at_level[baseline])
        for name, configuration in configurations.items():
            rows.append(_level_row(configuration, level, at_level[name], reference, reference_texts, slo))
    frame = pd.DataFrame(rows)
    return frame[[c for c in LOAD_COLUMNS if c in frame.columns]]


def _texts(records: list[Window]) -> dict[tuple[int, int], str]:
    return {(w.window, r.index): r.text_sha256 for w in records for r in w.requests}


def _level_row(
    configuration: Configuration,
    level: dict[str, Any],
    records: list[Window],
    reference: list[float],
    reference_texts: dict[tuple[int, int], str],
    slo: dict[str, float],
) -> dict[str, Any]:
    throughput = [w.output_tokens_per_s for w in records]
    ((summary, speedup),) = stats.describe_many([throughput], reference)
    requests = [r for w in records for r in w.requests]
    latencies = [[_latency(r) for r in w.requests] for w in records]
    goodput = stats.describe(
        [
            sum(meets_slo(x, slo) for x in per_window) / w.duration_s
            for w, per_window in zip(records, latencies, strict=True)
        ]
    )
    met = sum(meets_slo(x, slo) for per_window in latencies for x in per_window)
    row: dict[str, Any] = {
        "configuration": configuration.name,
        "baseline": configuration.baseline,
        "load": level["label"],
        "load_kind": level["kind"],
        "load_value": level["value"],
        "windows": len(records),
        "requests": len(requests),
        "output_tok_s_mean": summary.mean,
        "output_tok_s_ci95_low": summary.ci_low,
        "output_tok_s_ci95_high": summary.ci_high,
        "speedup": None if configuration.baseline else speedup.ratio,
        "speedup_ci95_low": None if configuration.baseline else speedup.ci_low,
        "speedup_ci95_high": None if configuration.baseline else speedup.ci_high,
        "speedup_p_value": None if configuration.baseline else speedup.p_value,
        "request_throughput_mean": float(np.mean([w.requests_per_s for w in records])) if records else None,
        "goodput_mean": goodput.mean,
        "goodput_ci95_low": goodput.ci_low,
        "goodput_ci95_high": goodput.ci_high,
        "slo_met_pct": 100 * met / len(requests) if requests else None,
        "decode_tok_s_mean": float(np.nanmean([x.decode_tokens_per_s for w in latencies for x in w]))
        if requests
        else None,
    }
    samples = {
        "ttft_ms": [[x.ttft_s for x in w] for w in latencies],
        "tpot_ms": [[x.tpot_s for x in w if not math.isnan(x.tpot_s)] for w in latencies],
        "itl_ms": [[gap for x in w for gap in x.itl_s] for w in latencies],
        "e2e_ms": [[x.e2e_s for x in w] for w in latencies],
    }
    for metric, per_window in samples.items():
        for q, found in zip(PERCENTILES, pooled_percentiles(per_window), strict=True):
            row[f"{metric}_p{q}"], row[f"{metric}_p{q}_low"], row[f"{metric}_p{q}_high"] = (
                1000 * found.value,
                1000 * found.low,
                1000 * found.high,
            )
    row.update(_speculation(requests, records))
    row.update(energy.window_columns(records))
    row["text_matches_baseline"] = (
        all(reference_texts.get((w.window, r.index)) == r.text_sha256 for w in records for r in w.requests)
        if requests
        else None
    )
    return row


def _speculation(requests: list[WindowRequest], records: list[Window]) -> dict[str, Any]:
    drafted = sum(r.drafted or 0 for r in requests)
    accepted = sum(r.accepted or 0 for r in requests)
    steps = 0
    for window in records:
        counts = counter_speculation(window.counter_delta, 0)
        steps += (counts.verify_steps or 0) if counts else 0
    return {
        "drafted": drafted or None,
        "accepted": accepted if drafted else None,
        "acceptance_rate": accepted / drafted if drafted else None,
        "verify_steps": steps or None,
        "accept_length": 1 + accepted / steps if steps and drafted else None,
    }


CATEGORY_COLUMNS: dict[str, str] = {
    "configuration": "configuration name",
    "baseline": "true for the baseline configuration",
    "load": "single (one request at a time, idle server) or the load level of the windows",
    "category": "prompt category of the dataset (benchmark.prompts)",
    "requests": "requests of this category",
    "decode_tok_s_mean": "per-request decode rate (first token excluded), mean over the category's requests",
    "speedup": "decode_tok_s_mean / the baseline's for the same category and load",
    "speedup_ci95_low": "95 % Fieller interval of the speedup, requests as samples (NaN with < 3 a side)",
    "speedup_ci95_high": "upper bound",
    "drafted": "draft tokens proposed (sum over the category's requests)",
    "accepted": "draft tokens accepted",
    "acceptance_rate": "accepted / drafted",
    "accept_length": "1 + accepted / verify_steps where the engine gave verify steps per request "
    "(single-request runs), else empty",
}


def category_table(configurations: dict[str, Configuration], requests: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration, load and category (see CATEGORY_COLUMNS)."""
    baseline = next(c.name for c in configurations.values() if c.baseline)
    rows = []
    if requests.empty:
        return pd.DataFrame(columns=list(CATEGORY_COLUMNS))
    for (load, category), group in requests.groupby(["load", "category"], sort=False):
        reference = group.loc[group["configuration"] == baseline, "decode_tok_s"].tolist()
        for name, configuration in configurations.items():
            mine = group[group["configuration"] == name]
            rates = mine["decode_tok_s"].tolist()
            ((summary, speedup),) = stats.describe_many([rates], reference, intervals=False)
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
                    "decode_tok_s_mean": summary.mean,
                    "speedup": None if configuration.baseline else speedup.ratio,
                    "speedup_ci95_low": None if configuration.baseline else speedup.ci_low,
                    "speedup_ci95_high": None if configuration.baseline else speedup.ci_high,
                    "drafted": drafted,
                    "accepted": accepted if drafted else None,
                    "acceptance_rate": accepted / drafted if drafted else None,
                    "accept_length": 1 + accepted / steps if steps and drafted else None,
                }
            )
    return pd.DataFrame(rows, columns=list(CATEGORY_COLUMNS))


def _total(values: pd.Series) -> float | None:
    known = pd.to_numeric(values, errors="coerce").dropna()
    return float(known.sum()) if len(known) else None


def crossover(levels: Sequence[float], speedups: Sequence[float], falling: bool = True) -> float | None:
    """The load at which the speedup first falls through 1 (``falling``; else rises through 1) between two
    measured levels, by linear interpolation; None when it never does in the measured range."""
    points = sorted((x, y) for x, y in zip(levels, speedups, strict=True) if not math.isnan(y))
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if (y0 >= 1.0 > y1) if falling else (y0 < 1.0 <= y1):
            return x0 + (1.0 - y0) * (x1 - x0) / (y1 - y0)
    return None


def crossover_lines(table: pd.DataFrame) -> list[str]:
    """One line per speculative configuration and load kind: where its speedup (point estimate) crosses 1."""
    lines = []
    for (name, kind), group in table[~table["baseline"]].groupby(["configuration", "load_kind"], sort=False):
        unit = "concurrency" if kind == CONCURRENCY else "requests/s"
        levels, speedups = group["load_value"].tolist(), group["speedup"].astype(float).tolist()
        low, high = min(levels), max(levels)
        if (found := crossover(levels, speedups)) is not None:
            lines.append(f"{name}: speedup falls below 1 at {unit} ~{found:.3g}")
        elif (rising := crossover(levels, speedups, falling=False)) is not None:
            lines.append(f"{name}: speedup below 1 at {unit} {low:g}, above 1 from ~{rising:.3g} up to {high:g}")
        else:
            measured = f"{unit} {low:g}" if low == high else f"every {unit} from {low:g} to {high:g}"
            side = "below 1" if all(y < 1 for y in speedups) else "at or above 1"
            lines.append(f"{name}: speedup {side} at {measured}: no crossover measured")
    return lines


def write_tables(
    configurations: dict[str, Configuration],
    runs: dict[str, list[Run]],
    windows: dict[str, list[Window]],
    slo: dict[str, float],
    outputs: dict[str, str],
    progress: TextIO,
) -> None:
    """The load_tables job: requests.csv and categories.csv, and load.csv when ``outputs`` names one."""
    from specsweep.analyse.aggregate import write_csv

    requests = request_rows(configurations, runs, windows, slo)
    write_csv(requests, Path(outputs["requests"]))
    categories = category_table(configurations, requests)
    write_csv(categories, Path(outputs["categories"]))
    shown = categories[~categories["baseline"].astype(bool)]
    print(
        shown[
            ["configuration", "load", "category", "requests", "acceptance_rate", "accept_length", "speedup"]
        ].to_string(index=False),
        file=progress,
    )
    if "load" in outputs:
        table = load_table(configurations, windows, slo)
        write_csv(table, Path(outputs["load"]))
        print(
            table[
                [
                    "configuration",
                    "load",
                    "windows",
                    "output_tok_s_mean",
                    "speedup",
                    "speedup_ci95_low",
                    "speedup_ci95_high",
                    "tpot_ms_p50",
                    "ttft_ms_p90",
                    "goodput_mean",
                    "acceptance_rate",
                ]
            ].to_string(index=False),
            file=progress,
        )
        for line in crossover_lines(table) + energy.contended_levels(table):
            print(line, file=progress)
