"""specsweep's load client against ``vllm bench serve`` on one running vLLM server (a GPU node; issue 22).

    python benchmarks/vllm_bench_agreement.py --base-url http://127.0.0.1:8000 [--levels 1,8,32,64]
        [--requests 384] [--output-len 256] [--vllm "python3 -m vllm.entrypoints.cli.main"] [--out DIR]

For each concurrency level: ``vllm bench serve --backend openai --endpoint /v1/completions --dataset-name
custom --dataset-path PROMPTS --skip-chat-template --custom-output-len L --ignore-eos --num-prompts N
--max-concurrency C --request-rate inf --temperature 0 --percentile-metrics ttft,tpot,itl,e2el
--metric-percentiles 50,99 --save-result --result-dir OUT --result-filename vllm-cC.json`` (flags of
``vllm/benchmarks/serve.py`` and ``vllm/benchmarks/datasets/datasets.py``, 0.25.0), then specsweep's workflow
on the same N prompts (the same file, the same order) and levels, one window each. Prints, per level, the
ratio specsweep ÷ vllm-bench of output tok/s, TTFT, TPOT and ITL p50 and p99 (both in vLLM's definitions,
agreement.py) and writes OUT/agreement.json. ``--skip-chat-template``: vLLM's custom dataset applies the
tokenizer's chat template by default, specsweep sends the text as it is.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agreement import prompts_for, ratio_rows, specsweep_levels, table
from common import REPO

PROMPTS = REPO / "config" / "workloads" / "categories.jsonl"


def vllm_bench_argv(
    vllm: list[str],
    base_url: str,
    model: str | None,
    prompts: Path,
    level: int,
    requests: int,
    output_len: int,
    out: Path,
) -> list[str]:
    return [
        *vllm,
        "bench",
        "serve",
        "--backend",
        "openai",
        "--base-url",
        base_url,
        "--endpoint",
        "/v1/completions",
        *(["--model", model] if model else []),
        "--dataset-name",
        "custom",
        "--dataset-path",
        str(prompts),
        "--skip-chat-template",
        "--custom-output-len",
        str(output_len),
        "--ignore-eos",
        "--num-prompts",
        str(requests),
        "--max-concurrency",
        str(level),
        "--request-rate",
        "inf",
        "--temperature",
        "0",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,99",
        "--save-result",
        "--result-dir",
        str(out),
        "--result-filename",
        f"vllm-c{level}.json",
    ]


def vllm_levels(
    vllm: list[str],
    base_url: str,
    model: str | None,
    prompts: Path,
    levels: list[int],
    requests: int,
    output_len: int,
    out: Path,
) -> dict[int, dict]:
    """vllm bench serve's saved result of each level."""
    found = {}
    for level in levels:
        argv = vllm_bench_argv(vllm, base_url, model, prompts, level, requests, output_len, out)
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        found[level] = json.loads((out / f"vllm-c{level}.json").read_text())
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", help="the served model name (default: vllm bench asks /v1/models)")
    parser.add_argument("--levels", default="1,8,32,64")
    parser.add_argument("--requests", type=int, default=384, help="requests per level, for each tool")
    parser.add_argument("--output-len", type=int, default=256)
    parser.add_argument("--prompts", type=Path, default=PROMPTS)
    parser.add_argument(
        "--vllm",
        default="vllm",
        help="how to start vLLM's CLI (a --target install: python3 -m vllm.entrypoints.cli.main)",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="specsweep-vllm-agreement-"))
    out.mkdir(parents=True, exist_ok=True)
    levels = [int(x) for x in args.levels.split(",")]
    prompts = out / "prompts.jsonl"
    prompts_for(args.prompts, args.requests, prompts)
    theirs = vllm_levels(
        shlex.split(args.vllm), args.base_url, args.model, prompts, levels, args.requests, args.output_len, out
    )
    ours = specsweep_levels(args.base_url, prompts, levels, args.requests, args.output_len, out / "specsweep")
    rows = ratio_rows(ours, theirs)
    (out / "agreement.json").write_text(json.dumps({"tool": "vllm bench serve", "rows": rows}, indent=1) + "\n")
    print(table(rows, "vllm bench serve"))
    print(f"\nwritten to {out / 'agreement.json'}")


if __name__ == "__main__":
    main()
