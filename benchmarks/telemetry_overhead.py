"""The telemetry sampler's overhead on the measured throughput, in one server session.

One real llama-server (tests/data/config.yaml's baseline, its cached build and model), then ``PAIRS`` pairs
of runs exactly as a sweep measures them (``request.measured_run``), one of each pair sampled at
``benchmark.telemetry_hz`` and one not, the order within each pair seeded at random: launch-to-launch
variation cancels, and drift within the session falls on both sides alike. The figure is the ratio of the
median client decode rate with the sampler to without it (target 1 ± 0.01), with the engine's own rate
beside it (a sampler that steals the engine's CPU would show there too).

    flock /tmp/specsweep-heavy.lock .venv/bin/python benchmarks/telemetry_overhead.py [--pairs N] [--hz R]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, run_child, snakemake_argv

from specsweep.engines import adapter
from specsweep.engines.base import EngineResources
from specsweep.engines.server import StaleGroup, free_port, managed_server, wait_until_ready
from specsweep.measure import request, telemetry
from specsweep.plan import config as sweep_config
from specsweep.plan.workload import read_workload
from specsweep.record.atomic import read_json

CONFIG = REPO / "tests" / "data" / "config.yaml"
PAIRS = 15
TOKENS = 128


def measure(pairs: int = PAIRS, rate_hz: float = telemetry.RATE_HZ) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="specsweep-telemetry-overhead-"))
    raw = yaml.safe_load(CONFIG.read_text())
    raw["benchmark"].update(prompts=str(REPO / "config" / "prompts.txt"), max_tokens=TOKENS)
    (workdir / "config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    # the engine build and the model, from the user cache (built on first use)
    run_child(snakemake_argv(workdir, "results/engine/llama.json", "results/models/smollm2-135m.json"))
    config = sweep_config.validate_schema(raw)
    configuration = sweep_config.expand(config)["baseline"]
    settings, benchmark = config["engines"]["llama"], {**config["benchmark"], "telemetry_hz": rate_hz}
    engine = adapter(
        "llamacpp",
        settings,
        EngineResources(
            executable=read_json(workdir / "results/engine/llama.json")["executable"],
            model=read_json(workdir / "results/models/smollm2-135m.json")["path"],
        ),
    )
    port, prompts = free_port("127.0.0.1"), read_workload(Path(benchmark["prompts"]))
    base_url, log = engine.base_url("127.0.0.1", port), workdir / "server.log"
    watch = telemetry.watch(benchmark, configuration.env)
    order = random.Random(20261201)
    rates: dict[bool, list[float]] = {True: [], False: []}
    engine_rates: dict[bool, list[float]] = {True: [], False: []}
    argv, stale = engine.command(configuration, "127.0.0.1", port), StaleGroup(workdir / "pgid")
    with managed_server(argv, dict(os.environ), log, stale, 10.0) as process:
        wait_until_ready(process, lambda: engine.is_ready(base_url), 120.0, log, port=port)
        request.generate(engine, base_url, prompts[0].text, 8, benchmark)  # warmup
        for pair in range(pairs):
            for sampled in order.sample([True, False], 2):
                index = 2 * pair + sampled
                if sampled:
                    with watch.sampled():
                        run = request.measured_run(engine, base_url, prompts, index, benchmark)
                else:
                    run = request.measured_run(engine, base_url, prompts, index, benchmark)
                rates[sampled].append(run.decode_tokens_per_s)
                engine_rates[sampled].append(run.engine_tokens_per_s)
    shutil.rmtree(workdir)  # the server stopped with the block above; nothing of it is kept
    return {
        "pairs": pairs,
        "rate_hz": rate_hz,
        "tokens": TOKENS,
        "sampling": watch.describe(),
        "client_ratio": statistics.median(rates[True]) / statistics.median(rates[False]),
        "engine_ratio": statistics.median(engine_rates[True]) / statistics.median(engine_rates[False]),
        "tok_s_with_median": statistics.median(rates[True]),
        "tok_s_without_median": statistics.median(rates[False]),
        "target_met": abs(statistics.median(rates[True]) / statistics.median(rates[False]) - 1) <= 0.01,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=PAIRS)
    parser.add_argument("--hz", type=float, default=telemetry.RATE_HZ)
    args = parser.parse_args()
    print(json.dumps(measure(args.pairs, args.hz), indent=1))


if __name__ == "__main__":
    main()
