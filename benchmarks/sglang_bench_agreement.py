"""specsweep's load client against SGLang's own ``python -m sglang.bench_serving`` on one running SGLang server
(a GPU node).

    python benchmarks/sglang_bench_agreement.py --base-url http://127.0.0.1:30000 --tokenizer MODEL_DIR
        [--levels 8,32] [--requests 128] [--pairs 4] [--output-len 256] [--sglang "python3 -m sglang.bench_serving"]
        [--out DIR]

For each concurrency level: ``python -m sglang.bench_serving --backend sglang-oai --base-url URL --dataset-name
custom --dataset-path CONVERSATIONS --tokenizer MODEL_DIR --sharegpt-output-len L --num-prompts N
--max-concurrency C --request-rate inf --temperature 0 --seed 0 --warmup-requests 1 --disable-tqdm
--output-file sglang-cC-pP.jsonl`` (flags and result keys of ``sglang/benchmark/serving.py`` and
``sglang/benchmark/datasets/custom.py``, 0.5.16; ``sglang.bench_serving`` is the deprecated import path that still
runs it), and specsweep's workflow on the same N prompts at the same level, one window, the two taking turns in
``--pairs`` interleaved pairs (agreement.interleaved). Both send plain ``/v1/completions`` (``sglang-oai``),
``ignore_eos`` (bench_serving's default), greedy, the same output length. SGLang's custom dataset reads
conversations (the first turn is the prompt, the second only has to exist) and shuffles them with ``--seed``:
the same N prompts as specsweep's window, in another order. Its result line has vLLM's field names
(``output_throughput``, ``median_ttft_ms``, ...; TPOT (latency - TTFT) / (output tokens - 1) per request, ITL
the gaps between chunks), as specsweep's bench_serve.json does. Prints each ratio specsweep ÷ SGLang with its
95 % interval over the pairs and writes OUT/agreement.json. SGLang's prefix cache is flushed (``/flush_cache``)
before every window, so that neither client finds the other's prompts cached.
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
from specsweep.engines.sglang import SGLang

PROMPTS = REPO / "config" / "workloads" / "categories.jsonl"


def conversations(texts: list[str], out: Path) -> Path:
    """The prompts as SGLang's custom dataset reads them: a user turn, and an assistant turn it requires
    (its length is not used: --sharegpt-output-len fixes the output)."""
    turns = ({"conversations": [{"role": "user", "content": t}, {"role": "assistant", "content": "."}]} for t in texts)
    out.write_text("".join(json.dumps(turn) + "\n" for turn in turns))
    return out


def sglang_bench_argv(
    sglang: list[str],
    base_url: str,
    tokenizer: str,
    dataset: Path,
    level: int,
    requests: int,
    output_len: int,
    result: Path,
) -> list[str]:
    return [
        *sglang,
        "--backend", "sglang-oai",
        "--base-url", base_url,
        "--dataset-name", "custom",
        "--dataset-path", str(dataset),
        "--tokenizer", tokenizer,
        "--sharegpt-output-len", str(output_len),
        "--num-prompts", str(requests),
        "--max-concurrency", str(level),
        "--request-rate", "inf",
        "--temperature", "0",
        "--seed", "0",
        "--warmup-requests", "1",
        "--disable-tqdm",
        "--output-file", str(result),
    ]  # fmt: skip


def sglang_window(
    sglang: list[str],
    base_url: str,
    tokenizer: str,
    dataset: Path,
    level: int,
    requests: int,
    output_len: int,
    out: Path,
    pair: int,
) -> dict:
    """bench_serving's result line of one window at ``level`` (it appends a line per run to --output-file)."""
    result = out / f"sglang-c{level}-p{pair}.jsonl"
    result.unlink(missing_ok=True)
    argv = sglang_bench_argv(sglang, base_url, tokenizer, dataset, level, requests, output_len, result)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return json.loads(result.read_text().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--tokenizer", required=True, help="the served model's folder (bench_serving tokenizes)")
    parser.add_argument("--levels", default="8,32")
    parser.add_argument("--requests", type=int, default=128, help="requests per window, for each tool")
    parser.add_argument("--pairs", type=int, default=4, help="interleaved pairs of windows per level")
    parser.add_argument("--output-len", type=int, default=256)
    parser.add_argument("--prompts", type=Path, default=PROMPTS)
    parser.add_argument("--sglang", default="python3 -m sglang.bench_serving", help="how to start bench_serving")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="specsweep-sglang-agreement-"))
    out.mkdir(parents=True, exist_ok=True)
    levels = [int(x) for x in args.levels.split(",")]
    prompts = out / "prompts.jsonl"
    dataset = conversations(prompts_for(args.prompts, args.requests, prompts), out / "conversations.jsonl")
    sglang = shlex.split(args.sglang)

    def ours(level: int, pair: int) -> dict:
        found = specsweep_levels(
            args.base_url, prompts, [level], args.requests, args.output_len, out / "specsweep" / f"c{level}-p{pair}"
        )
        return found[level]

    def theirs(level: int, pair: int) -> dict:
        return sglang_window(
            sglang, args.base_url, args.tokenizer, dataset, level, args.requests, args.output_len, out, pair
        )

    engine = SGLang({"kind": "sglang"}, EngineResources(model=args.tokenizer))
    rows = ratio_rows(interleaved(levels, args.pairs, ours, theirs, lambda: engine.flush_cache(args.base_url)))
    summary = {"tool": "sglang.bench_serving", "requests": args.requests, "output_len": args.output_len, "rows": rows}
    (out / "agreement.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(table(rows, "sglang.bench_serving"))
    print(f"\nwritten to {out / 'agreement.json'}")


if __name__ == "__main__":
    main()
