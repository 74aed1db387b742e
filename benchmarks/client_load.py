"""The load client's fidelity and capacity.

Fidelity: a sweep of the real llama-server at concurrency 1, 4 and 16 (one window of 16 requests
each, 64 tokens, -np 16); for every request, the client's decode rate (tokens - 1) / (last arrival -
first arrival) ÷ the engine's own ``predicted_per_second`` for that request (the same n - 1
intervals, see fidelity.py). Target: the median within 1 ± 0.005 at every level.

Capacity: the client (specsweep.measure.load.run_window + specsweep.measure.client.stream_post, as in a sweep)
against benchmarks/synthetic_server.py, a separate process streaming one-token events at a fixed
interval and reporting its own send-time decode rate. The aggregate event rate rises (16
concurrent streams, shorter intervals) until the median per-request timing error |client ÷
server - 1| exceeds 0.5 %; the highest rate within it is the client's capacity on this machine.

    .venv/bin/python benchmarks/client_load.py [capacity|fidelity]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PYTHON, REPO, run_child, snakemake_argv

from specsweep.analyse.latency import request_latency
from specsweep.engines.server import free_port
from specsweep.measure.client import stream_post
from specsweep.measure.load import run_window
from specsweep.plan.load_levels import CONCURRENCY, LoadLevel

FIDELITY_LEVELS = [1, 4, 16]
CAPACITY_STREAMS = 16
CAPACITY_EVENTS = 200  # events per request
CAPACITY_RATES = [500, 1000, 2000, 4000, 8000, 16000, 32000, 64000]  # aggregate events/s
ERROR_LIMIT = 0.005


def _synthetic_window(port: int, streams: int, interval_us: int) -> list[float]:
    """Per-request |client rate ÷ server rate - 1| of one window of ``streams`` concurrent requests."""

    def send(_index: int):
        return stream_post(
            f"http://127.0.0.1:{port}", "/completion", {"n_predict": CAPACITY_EVENTS, "interval_us": interval_us}, 30.0
        )

    sent, _ = run_window(LoadLevel(CONCURRENCY, streams), streams, send, seed=0)
    errors = []
    for request in sent:
        events = request.result.events
        client = (CAPACITY_EVENTS - 1) / (request.result.arrivals_s[CAPACITY_EVENTS - 1] - request.result.arrivals_s[0])
        errors.append(abs(client / events[-1]["timings"]["predicted_per_second"] - 1.0))
    return errors


def capacity() -> dict:
    port = free_port("127.0.0.1")
    server = subprocess.Popen(
        [PYTHON, str(Path(__file__).with_name("synthetic_server.py")), str(port)], stdout=subprocess.PIPE
    )
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == b"ready"
        steps, highest = [], None
        for rate in CAPACITY_RATES:
            interval_us = round(1e6 * CAPACITY_STREAMS / rate)
            errors = _synthetic_window(port, CAPACITY_STREAMS, interval_us)
            median = statistics.median(errors)
            steps.append(
                {"events_per_s": rate, "interval_us": interval_us, "error_median": median, "error_max": max(errors)}
            )
            if median > ERROR_LIMIT:
                break
            highest = rate
    finally:
        server.terminate()
        server.wait(timeout=10)
    return {
        "streams": CAPACITY_STREAMS,
        "events_per_request": CAPACITY_EVENTS,
        "highest_events_per_s": highest,
        "limit": ERROR_LIMIT,
        "steps": steps,
    }


def fidelity() -> dict:
    config = yaml.safe_load((REPO / "tests" / "data" / "config.yaml").read_text())
    config["engines"]["llama"]["args"].update({"-c": 16 * 1024, "-np": 16})
    config["benchmark"].update(
        prompts=str(REPO / "config" / "workloads" / "categories.jsonl"),
        runs=1,
        load={"concurrency": FIDELITY_LEVELS, "requests_per_window": 16, "windows": 1},
    )
    config["configurations"] = {"baseline": {"baseline": True}}
    workdir = Path(tempfile.mkdtemp(prefix="specsweep-load-fidelity-"))
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    run_child(snakemake_argv(workdir, "results/baseline/launch.json"))
    levels = []
    for level in FIDELITY_LEVELS:
        window = json.loads((workdir / f"results/baseline/load/c{level}/window_0.json").read_text())
        ratios = [
            request_latency(r["arrivals_us"], r["tokens"], r["e2e_s"]).decode_tokens_per_s / r["engine_decode_tok_s"]
            for r in window["requests"]
        ]
        median = statistics.median(ratios)
        levels.append(
            {
                "concurrency": level,
                "requests": len(ratios),
                "ratio_median": median,
                "ratio_min": min(ratios),
                "ratio_max": max(ratios),
                "target_met": abs(median - 1.0) <= 0.005,
            }
        )
    return {"workdir": str(workdir), "levels": levels}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", nargs="?", choices=["capacity", "fidelity"], default=None)
    which = parser.parse_args().which
    result = {}
    if which in (None, "capacity"):
        result["capacity"] = capacity()
    if which in (None, "fidelity"):
        result["fidelity"] = fidelity()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
