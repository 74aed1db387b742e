"""Scale: dry-run planning of 1,000 configurations, SGLang log parsing, aggregation of 10^5 runs.

Each piece runs in a child process (``python benchmarks/scale.py <piece> ...``) that prints its
own timing as JSON; the parent reads the child's peak RSS from ``wait4`` (with parsing workers: the
largest of the child and its workers). Parsing times what the summary job runs: ``write_profile``
streaming a generated SGLang log into profile.csv in a temporary folder (no user parsers), in one
process and with one worker process per core (``snakemake --cores N`` gives the summary job N).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sglang_log
from common import PYTHON, REPO, child_json, run_child, snakemake_argv

HERE = Path(__file__).resolve()


def plan_config(configurations: int) -> dict:
    """The default sweep's engine and model with a 10 x 10 x 10 n-gram grid (1,000 configurations)."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["benchmark"]["prompts"] = str(REPO / "config" / "prompts.txt")
    side = round(configurations ** (1 / 3))
    config["configurations"] = {
        "baseline": {"baseline": True},
        "grid": {
            "args": {"--spec-type": "ngram-simple"},
            "grid": {
                "args": {
                    "--spec-ngram-simple-size-n": list(range(1, side + 1)),
                    "--spec-ngram-simple-size-m": list(range(2, side + 2)),
                    "--spec-ngram-simple-min-hits": list(range(1, side + 1)),
                },
                "name": "g{--spec-ngram-simple-size-n}-{--spec-ngram-simple-size-m}-{--spec-ngram-simple-min-hits}",
            },
        },
    }
    return config


def bench_plan(configurations: int) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="specsweep-plan-"))
    (workdir / "config.yaml").write_text(yaml.safe_dump(plan_config(configurations), sort_keys=False))
    run = run_child(snakemake_argv(workdir, "-n", "all"))
    jobs = next((line for line in run.stdout.splitlines() if line.strip().startswith("total")), "")
    return {
        "configurations": configurations + 1,
        "wall_s": run.wall_s,
        "peak_rss_mib": run.peak_rss_mib,
        "jobs_line": jobs.strip(),
    }


def child_parse(path: str, workers: int) -> None:
    import io
    import re

    from specsweep.parsers.profile import write_profile

    progress = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="specsweep-parse-") as folder:
        started = time.perf_counter()
        write_profile(path, Path(folder) / "profile.csv", "sglang", "sglang", {}, 0, progress, "bench", workers)
        elapsed = time.perf_counter() - started
    rows = int(re.search(r"(\d+) sglang rows", progress.getvalue())[1])
    print(json.dumps({"seconds": elapsed, "rows": rows}))


def bench_parse(sizes_mb: list[int]) -> list[dict]:
    """Each size parsed by one process and by one per core, side by side on the same generated log."""
    results = []
    for size in sizes_mb:
        path = Path(tempfile.gettempdir()) / f"specsweep-bench-sglang-{size}MB.log"
        try:
            written = sglang_log.write(path, size * 10**6)
            for workers in dict.fromkeys([1, os.cpu_count() or 1]):
                timing, run = child_json([PYTHON, str(HERE), "parse", str(path), str(workers)])
                results.append(
                    {
                        "size_mb": written / 1e6,
                        "workers": workers,
                        "seconds": timing["seconds"],
                        "rows": timing["rows"],
                        "mb_per_s": written / 1e6 / timing["seconds"],
                        "peak_rss_mib": run.peak_rss_mib,
                    }
                )
        finally:
            path.unlink(missing_ok=True)
    return results


def child_aggregate(runs: int) -> None:
    import scipy.stats  # noqa: F401  (stats imports it on first use; the import is not aggregation time)

    from specsweep.analyse import aggregate
    from specsweep.plan.config import Configuration
    from specsweep.record.results import Run

    per = 100  # runs per configuration
    rng = random.Random(7)
    configurations = {
        f"c{i}": Configuration(
            name=f"c{i}",
            engine="llama",
            kind="llamacpp",
            baseline=i == 0,
            args={"--spec-ngram-simple-size-m": i},
            env={},
            axes={"--spec-ngram-simple-size-m": i},
            group="c",
        )
        for i in range(runs // per)
    }
    records = {
        name: [
            Run.from_json(
                {
                    "run": r,
                    "prompt_index": 0,
                    "tokens": 500,
                    "text_sha256": "x",
                    "client": {"decode_tokens_per_s": rng.gauss(80, 5), "ttft_s": 0.1, "itl_median_s": 0.01},
                    "engine": {"timings": {"predicted_per_second": rng.gauss(80, 5)}},
                    "speculation": {"drafted": 400, "accepted": 300, "verify_steps": 120},
                }
            )
            for r in range(per)
        ]
        for name in configurations
    }
    started = time.perf_counter()
    frame = aggregate.summarise(configurations, records, {})
    elapsed = time.perf_counter() - started
    print(json.dumps({"seconds": elapsed, "rows": len(frame), "runs": runs}))


def bench_aggregate(runs: int) -> dict:
    timing, run = child_json([PYTHON, str(HERE), "aggregate", str(runs)])
    return {**timing, "peak_rss_mib": run.peak_rss_mib}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("piece", choices=["all", "parse", "aggregate"])
    parser.add_argument("argument", nargs="?")
    parser.add_argument("workers", nargs="?", type=int, default=1)
    args = parser.parse_args()
    if args.piece == "parse":
        child_parse(args.argument, args.workers)
    elif args.piece == "aggregate":
        child_aggregate(int(args.argument))
    else:
        print(
            json.dumps(
                {"plan": bench_plan(1000), "parse": bench_parse([100, 1000]), "aggregate": bench_aggregate(100_000)}
            )
        )


if __name__ == "__main__":
    main()
