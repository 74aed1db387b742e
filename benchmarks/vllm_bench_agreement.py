"""specsweep's load client against ``vllm bench serve`` on one running vLLM server (a GPU node).

    python benchmarks/vllm_bench_agreement.py --base-url http://127.0.0.1:8000 [--levels 8,32]
        [--requests 128] [--pairs 4] [--output-len 256] [--vllm "python3 -m vllm.entrypoints.cli.main"] [--out DIR]

For each concurrency level: ``vllm bench serve --backend openai --endpoint /v1/completions --dataset-name
custom --dataset-path PROMPTS --skip-chat-template --custom-output-len L --ignore-eos --num-prompts N
--max-concurrency C --request-rate inf --temperature 0 --percentile-metrics ttft,tpot,itl,e2el
--metric-percentiles 50,99 --save-result --result-dir OUT --result-filename vllm-cC-pP.json`` (flags of
``vllm/benchmarks/serve.py`` and ``vllm/benchmarks/datasets/datasets.py``, 0.25.0), and specsweep's workflow
on the same N prompts (the same file, the same order) at the same level, one window, the two taking turns in
``--pairs`` interleaved pairs (A B, B A, ...: agreement.interleaved). Prints, per level, the ratio
specsweep ÷ vllm-bench of output tok/s, TTFT, TPOT and ITL p50 and p99 (both in vLLM's definitions,
agreement.py) with its 95 % interval over the pairs, and writes OUT/agreement.json. ``--skip-chat-template``:
vLLM's custom dataset applies the tokenizer's chat template by default, specsweep sends the text as it is.
The prefix cache is reset (``/reset_prefix_cache``: start the server with ``VLLM_SERVER_DEV_MODE=1``) before
every window, so that neither client finds the other's prompts cached.
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
from agreement import interleaved, prompts_for, ratio_rows, specsweep_levels, table
from common import REPO

from specsweep.engines.base import EngineResources
from specsweep.engines.vllm import VLLM

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
    name: str,
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
        name,
    ]


def vllm_window(
    vllm: list[str],
    base_url: str,
    model: str | None,
    prompts: Path,
    level: int,
    requests: int,
    output_len: int,
    out: Path,
    pair: int,
) -> dict:
    """vllm bench serve's saved result of one window at ``level``."""
    name = f"vllm-c{level}-p{pair}.json"
    subprocess.run(
        vllm_bench_argv(vllm, base_url, model, prompts, level, requests, output_len, out, name),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return json.loads((out / name).read_text())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", help="the served model name (default: vllm bench asks /v1/models)")
    parser.add_argument("--levels", default="8,32")
    parser.add_argument("--requests", type=int, default=128, help="requests per window, for each tool")
    parser.add_argument("--pairs", type=int, default=4, help="interleaved pairs of windows per level")
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
    vllm = shlex.split(args.vllm)

    def ours(level: int, pair: int) -> dict:
        found = specsweep_levels(
            args.base_url, prompts, [level], args.requests, args.output_len, out / "specsweep" / f"c{level}-p{pair}"
        )
        return found[level]

    def theirs(level: int, pair: int) -> dict:
        return vllm_window(vllm, args.base_url, args.model, prompts, level, args.requests, args.output_len, out, pair)

    engine = VLLM({"kind": "vllm"}, EngineResources(model=args.model or ""))
    rows = ratio_rows(interleaved(levels, args.pairs, ours, theirs, lambda: engine.flush_cache(args.base_url)))
    summary = {"tool": "vllm bench serve", "requests": args.requests, "output_len": args.output_len, "rows": rows}
    (out / "agreement.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(table(rows, "vllm bench serve"))
    print(f"\nwritten to {out / 'agreement.json'}")


if __name__ == "__main__":
    main()
