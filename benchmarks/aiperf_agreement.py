"""specsweep's load client against NVIDIA AIPerf on one llama-server, at concurrency 1, 4 and 16 (``make bench``).

    .venv/bin/python benchmarks/aiperf_agreement.py

The engine is pinned to core 0 and both clients, taking turns in interleaved pairs of windows, to core 1
(``taskset``): a client that shares the engine's core measures the contention, not the server. AIPerf is
installed by this script into its own virtual environment under specsweep's cache (``aiperf``, with ``gguf`` to
read the model's tokenizer), not into specsweep's. Both clients send the same prompts in the same order to
llama-server's OpenAI ``/v1/completions``, streamed, ``ignore_eos``, the same output length; AIPerf counts
output tokens from the server's ``usage`` (``--use-server-token-count``) and gets a tokenizer folder made from
the GGUF (gguf_tokenizer.py), since its ``builtin`` one downloads a table.

AIPerf's metrics (aiperf/metrics/types, 0.13.0) in vLLM's names: ``output_token_throughput`` (output tokens
over the benchmark duration) is ``output_throughput``, ``time_to_first_token`` TTFT, ``inter_token_latency``
((request latency - TTFT) / (output tokens - 1)) TPOT, ``inter_chunk_latency`` (the gaps between streamed
chunks) ITL; specsweep's figures come from its bench_serve.json (vLLM's definitions, agreement.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agreement import interleaved, prompts_for, ratio_rows, specsweep_levels, table
from common import PYTHON, REPO, snakemake_argv

from specsweep.engines.server import free_port, process_group
from specsweep.record.cache import cache_root

AIPERF = "aiperf==0.13.0"
GGUF = "gguf==0.19.0"
LEVELS = [1, 4, 16]
REQUESTS = 32  # per window and tool: 2 windows' worth at c16
PAIRS = 2  # interleaved pairs of windows per level: the fewest that carry an interval
MAX_TOKENS = 64
ENGINE_CPUS, CLIENT_CPUS = "0", "1"
# AIPerf metric (its JSON export) -> vllm bench serve field, for the statistics agreement.RATIOS uses
FIELDS = {
    ("output_token_throughput", "avg"): "output_throughput",
    ("time_to_first_token", "p50"): "median_ttft_ms",
    ("time_to_first_token", "p99"): "p99_ttft_ms",
    ("inter_token_latency", "p50"): "median_tpot_ms",
    ("inter_token_latency", "p99"): "p99_tpot_ms",
    ("inter_chunk_latency", "p50"): "median_itl_ms",
    ("inter_chunk_latency", "p99"): "p99_itl_ms",
    ("request_count", "avg"): "completed",
}


def aiperf_env() -> Path:
    """AIPerf's own virtual environment (made once; a half-made one is made again)."""
    venv = cache_root() / "aiperf" / AIPERF.replace("==", "-")
    done = venv / ".installed"
    if not done.exists():
        subprocess.run([PYTHON, "-m", "venv", "--clear", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, AIPERF, GGUF], check=True)
        done.touch()
    return venv


def engine_and_model(workdir: Path) -> tuple[str, str]:
    """llama-server and SmolLM2 as the default sweep pins them (the engine and model rules: cached builds)."""
    config = (REPO / "tests" / "data" / "config.yaml").read_text()
    config = config.replace("PROMPTS", str(REPO / "config" / "prompts.txt"))
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(config)
    subprocess.run(
        snakemake_argv(workdir, "results/engine/llama.json", "results/models/smollm2-135m.json"),
        check=True,
        capture_output=True,
    )
    engine = json.loads((workdir / "results/engine/llama.json").read_text())
    model = json.loads((workdir / "results/models/smollm2-135m.json").read_text())
    return engine["executable"], model["path"]


def aiperf_level(venv: Path, base_url: str, tokenizer: Path, prompts: Path, level: int, out: Path) -> dict:
    """One AIPerf run at ``level``, its summary in vllm bench serve's field names (``out``: this run's own)."""
    artifacts = out / f"aiperf-c{level}"
    argv = [
        "taskset", "-c", CLIENT_CPUS, str(venv / "bin" / "aiperf"), "profile",
        "--model", "smollm2-135m", "--url", base_url, "--endpoint-type", "completions", "--streaming",
        "--input-file", str(prompts), "--custom-dataset-type", "single-turn",
        "--dataset-sampling-strategy", "sequential",
        "--concurrency", str(level), "--request-count", str(REQUESTS), "--osl", str(MAX_TOKENS),
        "--extra-inputs", "ignore_eos:true", "--use-server-token-count", "--tokenizer", str(tokenizer),
        "--random-seed", "0", "--artifact-dir", str(artifacts), "--ui-type", "none",
    ]  # fmt: skip
    # no HF_HUB_OFFLINE: AIPerf 0.13.0 then takes a local tokenizer folder for a hub id (HFValidationError)
    subprocess.run(argv, check=True, capture_output=True)
    summary = json.loads(next(artifacts.rglob("profile_export_aiperf.json")).read_text())
    return {field: _metric(summary, tag, stat) for (tag, stat), field in FIELDS.items()}


def _metric(summary: dict, tag: str, stat: str) -> float | None:
    found = summary.get(tag) or next((m for m in summary.get("records", []) if m.get("tag") == tag), None)
    return None if not isinstance(found, dict) else found.get(stat)


def measure(out: Path) -> dict:
    venv = aiperf_env()
    binary, model = engine_and_model(out / "engine")
    tokenizer = out / "tokenizer"
    make_tokenizer = [str(venv / "bin" / "python"), str(Path(__file__).with_name("gguf_tokenizer.py"))]
    subprocess.run([*make_tokenizer, model, str(tokenizer)], check=True)
    prompts = out / "prompts.jsonl"
    texts = prompts_for(REPO / "config" / "workloads" / "categories.jsonl", REQUESTS, prompts)
    aiperf_prompts = out / "aiperf-prompts.jsonl"  # AIPerf's single_turn format: {"text": ...}
    aiperf_prompts.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    port = free_port("127.0.0.1")
    base_url = f"http://127.0.0.1:{port}"
    slots = max(LEVELS)
    server = ["taskset", "-c", ENGINE_CPUS, binary, "-m", model, "--host", "127.0.0.1", "--port", str(port)]
    server += ["-np", str(slots), "-c", str(slots * 1024), "-t", "1", "--metrics"]
    with (
        open(out / "server.log", "wb") as log,
        process_group(server, grace_s=10.0, stdout=log, stderr=subprocess.STDOUT) as process,
    ):
        deadline = time.monotonic() + 120
        while not _ready(base_url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"llama-server did not start; see {out / 'server.log'}")
            time.sleep(0.2)

        def ours(level: int, pair: int) -> dict:
            workdir = out / "specsweep" / f"c{level}-p{pair}"
            return specsweep_levels(base_url, prompts, [level], REQUESTS, MAX_TOKENS, workdir, CLIENT_CPUS)[level]

        def theirs(level: int, pair: int) -> dict:
            return aiperf_level(venv, base_url, tokenizer, aiperf_prompts, level, out / f"p{pair}")

        rows = ratio_rows(interleaved(LEVELS, PAIRS, ours, theirs))
    return {"tool": AIPERF, "workdir": str(out), "requests": REQUESTS, "max_tokens": MAX_TOKENS, "rows": rows}


def _ready(base_url: str) -> bool:
    try:
        return requests.get(base_url + "/health", timeout=1).status_code == 200
    except requests.RequestException:
        return False


def main() -> None:
    result = measure(Path(tempfile.mkdtemp(prefix="specsweep-aiperf-agreement-")))
    print(table(result["rows"], "AIPerf"))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
