#!/usr/bin/env python3
"""A stand-in for ``python -m sglang.bench_serving`` (sglang 0.5.16): the flags it takes, and a result line in its
--output-file format.

The flags are those sglang/benchmark/serving.py declares (an unknown one is an error, as for its argparse); the
custom dataset must be what sglang/benchmark/datasets/custom.py reads (JSONL of ``conversations`` with at least two
turns); the result is tests/fixtures/sglang_bench_serving_result.json (the keys serving.py writes) with this run's
concurrency and prompt count, appended as one line to --output-file. Nothing is sent anywhere.
"""

import argparse
import json
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sglang_bench_serving_result.json"


def main() -> None:
    parser = argparse.ArgumentParser(prog="sglang.bench_serving", allow_abbrev=False)
    for flag in ("--backend", "--base-url", "--dataset-name", "--dataset-path", "--tokenizer", "--output-file"):
        parser.add_argument(flag)
    for flag in ("--sharegpt-output-len", "--num-prompts", "--max-concurrency", "--seed", "--warmup-requests"):
        parser.add_argument(flag, type=int)
    for flag in ("--request-rate", "--temperature"):
        parser.add_argument(flag, type=float)
    parser.add_argument("--disable-tqdm", action="store_true")
    args = parser.parse_args()
    if args.dataset_name != "custom" or not Path(args.dataset_path).is_file():
        raise SystemExit("fake sglang.bench_serving: --dataset-name custom with an existing --dataset-path")
    rows = [json.loads(line) for line in Path(args.dataset_path).read_text().splitlines()]
    if not all(len(row.get("conversations", [])) >= 2 for row in rows):
        raise SystemExit("fake sglang.bench_serving: each line needs `conversations` with at least two turns")
    result = {k: v for k, v in json.loads(FIXTURE.read_text()).items() if not k.startswith("_")}
    result.update(max_concurrency=args.max_concurrency, completed=args.num_prompts, backend=args.backend)
    result["output_throughput"] *= args.max_concurrency  # each level told apart
    with open(args.output_file, "a") as out:
        out.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
