"""A level's result in the PyTorch OSS benchmark database format, as vLLM writes it beside its result file
(``<name>.pytorch.json``; vllm/benchmarks/serve.py ``save_to_pytorch_benchmark_format`` and
vllm/benchmarks/lib/utils.py ``convert_to_pytorch_benchmark_format`` at 009e6d4a): one record per latency
metric, ``{"benchmark": {"name", "extra_info": {"args"}}, "model": {"name"}, "metric": {"name",
"benchmark_values", "extra_info"}}``, every other result key in the metric's ``extra_info``. vLLM's ``args``
is its command line; specsweep's are the level's equivalents of those options. vLLM writes it only with
``SAVE_TO_PYTORCH_BENCHMARK_FORMAT`` set; specsweep always does, since the dashboard is its reason to exist.
"""

from __future__ import annotations

from typing import Any

# the metrics vLLM puts in records, in its order; the lists it leaves out of extra_info
METRICS = (
    "median_ttft_ms", "mean_ttft_ms", "std_ttft_ms", "p99_ttft_ms",
    "mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms",
    "median_itl_ms", "mean_itl_ms", "std_itl_ms", "p99_itl_ms",
)  # fmt: skip
IGNORED = ("ttfts", "itls", "generated_texts", "errors")
# the --save-result keys that are the command line's options (vllm bench serve's argparse names)
ARGS = ("backend", "label", "model_id", "request_rate", "burstiness", "max_concurrency", "num_prompts")


def records(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``.pytorch.json`` records of one ``--save-result`` dict."""
    args = {("model" if key == "model_id" else key): result.get(key) for key in ARGS}
    extra = {k: v for k, v in result.items() if k not in METRICS and k not in IGNORED}
    return [
        {
            "benchmark": {"name": "vLLM benchmark", "extra_info": {"args": args}},
            "model": {"name": result.get("model_id")},
            "metric": {"name": name, "benchmark_values": [result[name]], "extra_info": extra},
        }
        for name in METRICS
        if name in result
    ]
