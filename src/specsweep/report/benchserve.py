"""The load levels as ``vllm bench serve --save-result`` writes them, so dashboards that read vLLM's result JSON
read specsweep's: ``results/bench_serve/<configuration>/<level>.json``, one file per configuration and load level
in exactly the keys and nesting of vLLM's file, with the level's requests beside it (report/requestlog.py), and
``results/bench_serve.json``, every level's result in one list for specsweep's own readers; vLLM's
``.pytorch.json`` beside each file (report/pytorchformat.py).

Field names, order and definitions are vLLM's (``vllm/benchmarks/serve.py`` at commit 009e6d4a, ``main``'s
``result_json``, ``benchmark``'s ``result`` and ``calculate_metrics``; tests/fixtures/vllm_save_result_009e6d4a.json):
``completed``, ``failed``, ``total_input_tokens``, ``total_output_tokens``, ``request_throughput``,
``request_goodput`` (requests meeting every ``benchmark.load.slo`` objective / ``duration``, null without SLOs,
TPOT counted 0 for a one-token request as vLLM does), ``output_throughput``, ``total_token_throughput`` (over
``duration``, seconds), ``max_output_tokens_per_s`` and ``max_concurrent_requests`` (one-second buckets from the
first send; sweep-line peak), and for each of ``ttft``, ``tpot``, ``itl``, ``e2el`` the ``mean_``, ``median_``,
``std_`` and ``p<q>_`` values in milliseconds (numpy's over requests, or over every inter-token gap for ITL);
TPOT = (E2E - TTFT) / (tokens - 1) over requests of more than one token; ``spec_decode_*`` as vLLM defines them
(acceptance rate in %, length 1 + accepted / drafts, per-position accepted / drafts) for every engine:
vLLM's and llama.cpp's ``/metrics`` counter deltas, else the requests' own counts (SGLang's ``meta_info``,
llama-server's ``timings``), whose number of drafts is unknown (``spec_decode_num_drafts`` and the length
null). Where specsweep measures differently: its windows are pooled (``duration`` is their summed
first-send-to-last-end time, the peaks the largest window's), a request that fails stops the session instead
of being counted, so ``failed`` counts only the requests whose token count disagrees with their stream
(``WindowRequest.flagged``); input tokens are the engine's own prompt counts, null in records that lack them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from specsweep.analyse.latency import PERCENTILES, request_latency
from specsweep.engines import adapter_class
from specsweep.engines.vllm import per_position_rates
from specsweep.plan.load_levels import CONCURRENCY, RAMP_UP, REQUEST_RATE
from specsweep.record.arrivals import decode_arrivals
from specsweep.record.rates import END_TO_END_OUTPUT
from specsweep.record.results import Window, WindowRequest

FORMAT = "specsweep bench_serve 2 (vllm bench serve --save-result files, results/bench_serve/)"
METRICS = ("ttft", "tpot", "itl", "e2el")  # at load.csv's PERCENTILES
# benchmark.load.slo's keys as vLLM's --goodput names them
GOODPUT = {"ttft_ms": "ttft", "tpot_ms": "tpot", "e2e_ms": "e2el"}
# which rate each throughput field is, in the words every other output uses (record/rates.py)
DEFINITIONS = {
    "output_throughput": END_TO_END_OUTPUT.described,
    "request_throughput": "requests / the windows' summed first-send-to-last-end time (requests/s; ramp-up and "
    "drain included, as output_throughput)",
}


def level_result(
    windows: Sequence[Window],
    percentiles: Sequence[float] = PERCENTILES,
    slo: dict[str, float] | None = None,
    kind: str | None = None,
) -> dict[str, Any]:
    """One level's windows (one configuration) as the ``result`` of vLLM's ``benchmark()``, in its key order;
    ``kind``: the configuration's engine adapter, which reads its own counters (``speculation``)."""
    every = [r for w in windows for r in w.requests]
    # a request whose token count disagrees with its stream (record/tokens.py) is vLLM's failed request
    requests = [r for r in every if not r.flagged]
    duration = sum(w.duration_s for w in windows)
    samples: dict[str, list[float]] = {metric: [] for metric in METRICS}
    good = 0
    goodput = {key: limit for key, limit in (slo or {}).items() if key in GOODPUT}  # not the rate search's
    for request in requests:
        latency = request_latency(request.arrivals_us, request.tokens, request.e2e_s)
        tpot = (latency.e2e_s - latency.ttft_s) / (request.tokens - 1) if request.tokens > 1 else None
        samples["ttft"].append(latency.ttft_s)
        samples["e2el"].append(latency.e2e_s)
        samples["itl"].extend(latency.itl_s)
        if tpot is not None:
            samples["tpot"].append(tpot)
        measured = {"ttft": latency.ttft_s, "tpot": tpot or 0.0, "e2el": latency.e2e_s}
        good += all(measured[GOODPUT[key]] * 1000 <= limit for key, limit in goodput.items())
    output = sum(r.tokens for r in requests)
    prompt_counts = [r.prompt_tokens for r in requests]
    total_input = sum(prompt_counts) if None not in prompt_counts else None  # type: ignore[arg-type]
    peak_tokens, peak_requests = zip(*(peaks(w) for w in windows), strict=True) if windows else ((0.0,), (0,))

    def rate(count: float | None) -> float | None:
        return count / duration if duration and count is not None else None

    result: dict[str, Any] = {
        "duration": duration,
        "completed": len(requests),
        "failed": len(every) - len(requests),
        "total_input_tokens": total_input,
        "total_output_tokens": output,
        "request_throughput": rate(len(requests)),
        "request_goodput": rate(good) if goodput else None,
        "output_throughput": rate(output),
        "total_token_throughput": rate(total_input + output) if total_input is not None else None,
        "latencies": samples["e2el"],
        "max_output_tokens_per_s": max(peak_tokens),
        "max_concurrent_requests": max(peak_requests),
        "rtfx": 0.0,  # audio only
    }
    result.update(speculation(windows, kind))
    for metric in METRICS:
        values = np.asarray(samples[metric] or [0.0]) * 1000  # vLLM reports 0 for an empty sample
        result[f"mean_{metric}_ms"] = float(np.mean(values))
        result[f"median_{metric}_ms"] = float(np.median(values))
        result[f"std_{metric}_ms"] = float(np.std(values))
        for q in percentiles:
            result[f"p{int(q) if int(q) == q else q}_{metric}_ms"] = float(np.percentile(values, q))
    return result


def token_times(request: WindowRequest) -> list[float]:
    """When each token-carrying event arrived, seconds after the window started."""
    return [request.sent_s + t for t in decode_arrivals(request.arrivals_us)]


def peaks(window: Window) -> tuple[float, int]:
    """vLLM's ``max_output_tokens_per_s`` (tokens in one-second buckets from the first send) and
    ``max_concurrent_requests`` (half-open [send, end) intervals, an end before a send at the same instant)."""
    requests = [r for r in window.requests if not r.flagged]
    if not requests:
        return 0.0, 0
    first = min(r.sent_s for r in requests)
    buckets = np.zeros(math.ceil(max(r.sent_s + r.e2e_s for r in requests) - first) + 1)
    for request in requests:
        for at, tokens in zip(token_times(request), request.tokens_per_event, strict=True):
            if 0 <= (second := int(at - first)) < len(buckets):
                buckets[second] += tokens
    events = sorted([(r.sent_s, 1) for r in requests] + [(r.sent_s + r.e2e_s, -1) for r in requests])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return float(buckets.max()), peak


def speculation(windows: Sequence[Window], kind: str | None) -> dict[str, Any]:
    """``spec_decode_*`` of vLLM's result for any engine; empty without drafts (as vLLM leaves them out). The
    windows' counter deltas as the ``kind``'s adapter reads them (as load.csv does), else the requests' own
    counts (SGLang's counters say none for overlapping requests; llama-server without /metrics)."""
    delta: dict[str, float] = {}
    for window in windows:
        for key, value in window.counter_delta.items():
            delta[key] = delta.get(key, 0.0) + value
    counts = adapter_class(kind).window_speculation(delta) if kind else None
    if counts is not None:
        drafted, accepted, drafts = counts.drafted or 0, counts.accepted, counts.verify_steps
    else:
        own = [r for w in windows for r in w.requests if r.drafted is not None and r.accepted is not None]
        drafted, accepted, drafts = sum(r.drafted for r in own), sum(r.accepted for r in own), None  # type: ignore[misc]
    if not drafted:
        return {}
    return {
        "spec_decode_acceptance_rate": 100 * accepted / drafted,
        "spec_decode_acceptance_length": (1 + accepted / drafts if drafts else 0.0) if drafts is not None else None,
        "spec_decode_num_drafts": int(drafts) if drafts is not None else None,
        "spec_decode_draft_tokens": int(drafted),
        "spec_decode_accepted_tokens": int(accepted),
        "spec_decode_per_position_acceptance_rates": per_position_rates(delta) or [],
    }


def save_result(windows: Sequence[Window], label: str, meta: dict[str, Any], slo: dict[str, float]) -> dict[str, Any]:
    """One configuration's level as vLLM's ``--save-result`` file: ``main``'s setup and traffic keys, then the
    result. ``meta``: the configuration's ``backend`` (vLLM's name for the endpoint: ``openai`` for
    /v1/completions, ``openai-chat`` with benchmark.chat_template), ``model_id`` and engine ``kind``."""
    level = windows[0].level
    started = datetime.fromisoformat(windows[0].started_at) if windows[0].started_at else None
    return {
        "date": started.strftime("%Y%m%d-%H%M%S") if started else None,
        "endpoint_type": meta.get("backend"),
        "backend": meta.get("backend"),
        "label": label,
        "model_id": meta.get("model_id"),
        "tokenizer_id": meta.get("model_id"),  # the server's own tokenizer counts every token here
        "num_prompts": sum(len(w.requests) for w in windows),
        "request_rate": level.get("value") if level.get("kind") == REQUEST_RATE else "inf",  # vLLM: inf with a ramp
        # the open loop's gamma shape as the window recorded it ("inf": constant gaps); 1.0 (vLLM's default,
        # Poisson) for a closed loop or an older record
        "burstiness": (windows[0].arrivals or {}).get("burstiness", 1.0),
        "max_concurrency": level.get("value") if level.get("kind") == CONCURRENCY else None,
        # vLLM writes these only for a ramp (--ramp-up-strategy), after max_concurrency
        **(
            {
                "ramp_up_strategy": level.get("strategy"),
                "ramp_up_start_rps": level.get("start"),
                "ramp_up_end_rps": level.get("value"),
            }
            if level.get("kind") == RAMP_UP
            else {}
        ),
        **level_result(windows, slo=slo or None, kind=meta.get("kind")),
    }


def meta_of(config: dict[str, Any], configurations: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each configuration's ``backend`` and ``model_id`` for its files (``save_result``): the endpoint its
    requests went to, and the ``models`` entry its engine serves."""
    backend = "openai-chat" if config["benchmark"].get("chat_template") else "openai"
    engines = config.get("engines", {})
    return {
        name: {"backend": backend, "model_id": engines.get(c.engine, {}).get("model"), "kind": c.kind}
        for name, c in configurations.items()
    }


def by_level(windows: list[Window]) -> dict[str, list[Window]]:
    """A configuration's measured windows (warmups left out) by level label, in window order."""
    found: dict[str, list[Window]] = {}
    for window in sorted((w for w in windows if not w.warmup), key=lambda w: w.window):
        found.setdefault(window.label, []).append(window)
    return found


def sweep_results(
    windows: dict[str, list[Window]],
    order: Sequence[str],
    meta: dict[str, dict[str, Any]] | None = None,
    slo: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Every configuration (in ``order``) and load level: ``{"format", "definitions", "results": [{configuration,
    load, <vLLM's file>}]}``."""
    results = []
    for name in order:
        for label, records in by_level(windows.get(name, [])).items():
            vllm = save_result(records, name, (meta or {}).get(name, {}), slo or {})
            results.append({"configuration": name, "load": label, **vllm})
    return {"format": FORMAT, "definitions": DEFINITIONS, "results": results}


def write(
    window_paths: Sequence[str],
    order: Sequence[str],
    output: str,
    directory: str,
    meta: dict[str, dict[str, Any]],
    slo: dict[str, float],
) -> None:
    """The ``bench_serve`` rule: ``results/bench_serve.json`` and, under ``directory``, each configuration's
    ``<level>.json`` (vLLM's file), ``<level>.pytorch.json`` and ``<level>.requests.jsonl``."""
    from specsweep.record.atomic import atomic_write, write_json
    from specsweep.record.results import load_windows
    from specsweep.report.pytorchformat import records as pytorch_records
    from specsweep.report.requestlog import write_requests

    windows = load_windows(window_paths)
    swept = sweep_results(windows, order, meta, slo)
    for entry in swept["results"]:
        folder = Path(directory) / entry["configuration"]
        folder.mkdir(parents=True, exist_ok=True)
        vllm = {k: v for k, v in entry.items() if k not in ("configuration", "load")}
        atomic_write(folder / f"{entry['load']}.json", json.dumps(vllm))  # as vLLM's json.dump: its key order
        atomic_write(folder / f"{entry['load']}.pytorch.json", json.dumps(pytorch_records(vllm)))
        levels = by_level(windows[entry["configuration"]])
        write_requests(folder / f"{entry['load']}.requests.jsonl", entry["configuration"], levels[entry["load"]])
    Path(directory).mkdir(parents=True, exist_ok=True)  # a sweep without load levels still has the folder
    write_json(output, swept)
