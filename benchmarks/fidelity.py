"""Fidelity: the client's decode tok/s and TTFT against the engine's own clock, per run.

llama.cpp b11434 (tools/server/server-common.h, ``server_slot_stats``): ``predicted_ms`` =
t_gen_last - t_prompt_last, from the sampling of the first token to that of the last one, and
``predicted_per_second`` = (predicted_n - 1) / predicted_ms ("the first token is free, it comes
from the logits of the last prompt batch"). The client's rate is (tokens - 1) / (last arrival -
first arrival): the same n - 1 intervals, so the ratio should be 1. ``prompt_ms`` runs from the
slot starting the prompt to the first token sampled; the client's TTFT also holds the HTTP
request, tokenization and slot selection, so TTFT - prompt_ms is reported in ms, not as a target.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specsweep.maths.stats import describe
from specsweep.record.results import read_run

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO


def fidelity(results: Path) -> dict:
    runs = [read_run(p) for p in sorted(results.glob("*/runs/run_*.json"))]
    rate, ttft_ms = [], []
    for run in runs:
        timings = run.engine.get("timings") or {}
        if timings.get("predicted_per_second"):
            rate.append(run.decode_tokens_per_s / timings["predicted_per_second"])
            ttft_ms.append(1000 * run.client.ttft_s - timings["prompt_ms"])
    ratio, offset = describe(rate, intervals=False), describe(ttft_ms, intervals=False)
    worst = max(rate, key=lambda r: abs(r - 1.0))
    return {
        "results": str(results),
        "runs": ratio.n,
        "decode_ratio_median": ratio.median,
        "decode_ratio_worst": worst,
        "decode_ratio_min": ratio.minimum,
        "decode_ratio_max": ratio.maximum,
        "ttft_minus_prompt_ms_median": offset.median,
        "ttft_minus_prompt_ms_max": offset.maximum,
        "target_met": abs(ratio.median - 1.0) <= 0.005,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results", nargs="*", type=Path, default=[REPO / "results"])
    print(json.dumps([fidelity(p) for p in parser.parse_args().results]))


if __name__ == "__main__":
    main()
