#!/usr/bin/env python3
"""A stand-in for ``vllm bench serve`` (vllm 0.25.0): the flags it takes, and a --save-result JSON in its format.

The flags are those vllm/benchmarks/serve.py ``add_cli_args`` and vllm/benchmarks/datasets/datasets.py declare
(an unknown one is an error, as it is for vLLM's argparse); the result is tests/fixtures/vllm_bench_serve_result.json
(the keys ``benchmark()`` and ``main()`` write, --save-detailed off) with this run's concurrency and prompt
count, written where --result-dir and --result-filename say. Nothing is sent anywhere.
"""

import argparse
import json
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_bench_serve_result.json"


def main() -> None:
    if sys.argv[1:3] != ["bench", "serve"]:
        sys.exit(f"fake vllm: only `vllm bench serve` is faked, not {sys.argv[1:3]}")
    parser = argparse.ArgumentParser(prog="vllm bench serve", allow_abbrev=False)
    for flag in (
        "--backend",
        "--base-url",
        "--endpoint",
        "--model",
        "--dataset-name",
        "--dataset-path",
        "--percentile-metrics",
        "--metric-percentiles",
        "--result-dir",
        "--result-filename",
    ):
        parser.add_argument(flag)
    for flag in ("--custom-output-len", "--num-prompts", "--max-concurrency"):
        parser.add_argument(flag, type=int)
    for flag in ("--request-rate", "--temperature"):
        parser.add_argument(flag, type=float)
    for flag in ("--skip-chat-template", "--ignore-eos", "--save-result"):
        parser.add_argument(flag, action="store_true")
    args = parser.parse_args(sys.argv[3:])
    if args.dataset_name != "custom" or not Path(args.dataset_path).is_file():
        sys.exit("fake vllm: --dataset-name custom with an existing --dataset-path")
    lines = Path(args.dataset_path).read_text().splitlines()
    if not all("prompt" in json.loads(line) for line in lines):
        sys.exit("fake vllm: the custom dataset must be JSONL with a 'prompt' column")
    result = json.loads(FIXTURE.read_text())
    result.update(max_concurrency=args.max_concurrency, num_prompts=args.num_prompts, completed=args.num_prompts)
    # the fixture's figures scaled by concurrency, so that each level is told apart
    result["output_throughput"] *= args.max_concurrency
    Path(args.result_dir, args.result_filename).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
