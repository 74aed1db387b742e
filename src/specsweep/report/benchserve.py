"""The load levels as ``vllm bench serve --save-result`` writes them, so dashboards that read vLLM's result JSON
read specsweep's: ``results/bench_serve.json``, one entry per configuration and load level.

Field names and definitions are vLLM's (``vllm/benchmarks/serve.py`` 0.25.0, ``calculate_metrics`` and
``benchmark``): ``completed``, ``failed``, ``total_output_tokens``, ``request_throughput`` and
``output_throughput`` (over ``duration``, seconds), and for each of ``ttft``, ``tpot``, ``itl``, ``e2el`` the
``mean_``, ``median_``, ``std_`` and ``p<q>_`` values in milliseconds (numpy's mean, median, std and linear
``percentile`` over requests, or over every inter-token gap for ITL); TPOT = (E2E - TTFT) / (tokens - 1)
over requests of more than one token; ``spec_decode_*`` from the ``vllm:spec_decode_*`` counter deltas
(acceptance rate in %, length 1 + accepted / drafts, per-position accepted / drafts). Where specsweep
measures differently: its windows are pooled (``duration`` is their summed first-send-to-last-end
time), a request that fails stops the session instead of being counted, so ``failed`` counts only the
requests whose token count disagrees with their stream (``WindowRequest.flagged``), and input tokens are not
recorded, so ``total_input_tokens`` and ``total_token_throughput`` are absent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from specsweep.analyse.latency import PERCENTILES, request_latency
from specsweep.engines.vllm import per_position_rates
from specsweep.plan.load_levels import CONCURRENCY
from specsweep.record.rates import END_TO_END_OUTPUT
from specsweep.record.results import Window

FORMAT = "specsweep bench_serve 1 (vllm bench serve --save-result field names)"
METRICS = ("ttft", "tpot", "itl", "e2el")  # at load.csv's PERCENTILES
# which rate each throughput field is, in the words every other output uses (record/rates.py)
DEFINITIONS = {
    "output_throughput": END_TO_END_OUTPUT.described,
    "request_throughput": "requests / the windows' summed first-send-to-last-end time (requests/s; ramp-up and "
    "drain included, as output_throughput)",
}
DRAFTS, DRAFT_TOKENS, ACCEPTED = (
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
)


def level_result(windows: Sequence[Window], percentiles: Sequence[float] = PERCENTILES) -> dict[str, Any]:
    """One level's windows (one configuration) as one ``vllm bench serve`` result."""
    every = [r for w in windows for r in w.requests]
    # a request whose token count disagrees with its stream (record/tokens.py) is vLLM's failed request
    requests = [r for r in every if not r.flagged]
    duration = sum(w.duration_s for w in windows)
    level = windows[0].level if windows else {}
    samples: dict[str, list[float]] = {metric: [] for metric in METRICS}
    for request in requests:
        latency = request_latency(request.arrivals_us, request.tokens, request.e2e_s)
        samples["ttft"].append(latency.ttft_s)
        samples["e2el"].append(latency.e2e_s)
        samples["itl"].extend(latency.itl_s)
        if request.tokens > 1:
            samples["tpot"].append((latency.e2e_s - latency.ttft_s) / (request.tokens - 1))
    output = sum(r.tokens for r in requests)
    result: dict[str, Any] = {
        "max_concurrency": level.get("value") if level.get("kind") == CONCURRENCY else None,
        "request_rate": level.get("value") if level.get("kind") != CONCURRENCY else "inf",
        "duration": duration,
        "completed": len(requests),
        "failed": len(every) - len(requests),
        "total_output_tokens": output,
        "request_throughput": len(requests) / duration if duration else None,
        "output_throughput": output / duration if duration else None,
    }
    for metric in METRICS:
        values = np.asarray(samples[metric] or [0.0]) * 1000  # vLLM reports 0 for an empty sample
        result[f"mean_{metric}_ms"] = float(np.mean(values))
        result[f"median_{metric}_ms"] = float(np.median(values))
        result[f"std_{metric}_ms"] = float(np.std(values))
        for q in percentiles:
            result[f"p{int(q) if int(q) == q else q}_{metric}_ms"] = float(np.percentile(values, q))
    result.update(speculation(windows))
    return result


def speculation(windows: Sequence[Window]) -> dict[str, Any]:
    """``spec_decode_*`` of vLLM's result from the windows' summed counter deltas; empty without drafts."""
    delta: dict[str, float] = {}
    for window in windows:
        for key, value in window.counter_delta.items():
            delta[key] = delta.get(key, 0.0) + value
    drafts, tokens, accepted = (delta.get(k, 0.0) for k in (DRAFTS, DRAFT_TOKENS, ACCEPTED))
    if not tokens:
        return {}
    return {
        "spec_decode_acceptance_rate": 100 * accepted / tokens,
        "spec_decode_acceptance_length": 1 + accepted / drafts if drafts else 0.0,
        "spec_decode_num_drafts": int(drafts),
        "spec_decode_draft_tokens": int(tokens),
        "spec_decode_accepted_tokens": int(accepted),
        "spec_decode_per_position_acceptance_rates": per_position_rates(delta) or [],
    }


def sweep_results(windows: dict[str, list[Window]], order: Sequence[str]) -> dict[str, Any]:
    """Every configuration (in ``order``) and load level: ``{"format", "results": [{configuration, load, ...}]}``."""
    results = []
    for name in order:
        by_level: dict[str, list[Window]] = {}
        for window in sorted((w for w in windows.get(name, []) if not w.warmup), key=lambda w: w.window):
            by_level.setdefault(window.label, []).append(window)
        for label, records in by_level.items():
            results.append({"configuration": name, "load": label, **level_result(records)})
    return {"format": FORMAT, "definitions": DEFINITIONS, "results": results}


def write(window_paths: Sequence[str], order: Sequence[str], output: str) -> None:
    """The ``bench_serve`` rule: ``results/bench_serve.json`` from the window records."""
    from specsweep.record.atomic import write_json
    from specsweep.record.results import load_windows

    write_json(output, sweep_results(load_windows(window_paths), order))
