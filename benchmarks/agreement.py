"""specsweep's load client against another benchmark client on one running server: the same prompts, levels and
output length, and per level the ratio specsweep ÷ other of output tok/s, TTFT, TPOT and ITL p50/p99.

specsweep is run as a user runs it: the workflow, with the server as an ``external`` endpoint (plain OpenAI
``/v1/completions``, as the other clients use), one window per concurrency level, and its figures read from
``results/bench_serve.json`` (``vllm bench serve``'s field names and definitions, report/benchserve.py), so a
ratio compares measurements, not definitions. Used by aiperf_agreement.py (CPU, ``make bench``) and
vllm_bench_agreement.py (GPU).
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Sequence
from pathlib import Path

import yaml
from common import REPO, snakemake_argv

from specsweep.plan.workload import read_workload
from specsweep.record.results import BENCH_SERVE

# (label, field of vllm bench serve's result JSON)
RATIOS = (
    ("output tok/s", "output_throughput"),
    ("TTFT p50", "median_ttft_ms"),
    ("TTFT p99", "p99_ttft_ms"),
    ("TPOT p50", "median_tpot_ms"),
    ("TPOT p99", "p99_tpot_ms"),
    ("ITL p50", "median_itl_ms"),
    ("ITL p99", "p99_itl_ms"),
)
TARGET = 0.03  # every ratio within 1 ± 0.03


def prompts_for(source: Path, requests: int, out: Path) -> list[str]:
    """``requests`` prompts of ``source`` in specsweep's window order (request i gets prompt i mod n), written
    one JSON object a line (``{"prompt": ...}``) so that every client sends request i the same text."""
    texts = [p.text for p in read_workload(source)]
    chosen = [texts[i % len(texts)] for i in range(requests)]
    out.write_text("".join(json.dumps({"prompt": t}) + "\n" for t in chosen))
    return chosen


def specsweep_levels(
    base_url: str,
    prompts: Path,
    levels: Sequence[int],
    requests: int,
    max_tokens: int,
    workdir: Path,
    cpus: str | None = None,
) -> dict[int, dict]:
    """specsweep's bench_serve.json entries by concurrency, measured by the workflow against ``base_url``."""
    config = {
        "engines": {"endpoint": {"kind": "external", "external": {"base_url": base_url}}},
        "benchmark": {
            "runs": 1,
            "max_tokens": max_tokens,
            "warmup_requests": 1,
            "warmup_max_tokens": 8,
            "prompts": str(prompts),
            "request_timeout_s": 600,
            "load": {"concurrency": list(levels), "requests_per_window": requests, "windows": 1},
        },
        "configurations": {"baseline": {"baseline": True}},
    }
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    argv = snakemake_argv(workdir, BENCH_SERVE)
    subprocess.run(["taskset", "-c", cpus, *argv] if cpus else argv, check=True, cwd=REPO, capture_output=True)
    results = json.loads((workdir / BENCH_SERVE).read_text())["results"]
    return {int(r["max_concurrency"]): r for r in results if r["max_concurrency"] is not None}


def ratio_rows(ours: dict[int, dict], theirs: dict[int, dict]) -> list[dict]:
    """One row per level both measured: each ratio specsweep ÷ other, and whether all are within TARGET."""
    rows = []
    for level in sorted(set(ours) & set(theirs)):
        ratios = {label: _ratio(ours[level].get(key), theirs[level].get(key)) for label, key in RATIOS}
        known = [r for r in ratios.values() if not math.isnan(r)]
        rows.append(
            {
                "concurrency": level,
                "requests": ours[level]["completed"],
                "ratios": ratios,
                "specsweep": {key: ours[level].get(key) for _, key in RATIOS},
                "other": {key: theirs[level].get(key) for _, key in RATIOS},
                "within_target": bool(known) and all(abs(r - 1) <= TARGET for r in known),
            }
        )
    return rows


def _ratio(a: float | None, b: float | None) -> float:
    return a / b if a is not None and b else float("nan")


def table(rows: list[dict], other: str) -> str:
    head = f"{'level':<6}" + "".join(f"{label:>13}" for label, _ in RATIOS)
    lines = [f"specsweep ÷ {other} (target 1 ± {TARGET})", head]
    for row in rows:
        lines.append(f"{'c' + str(row['concurrency']):<6}" + "".join(f"{row['ratios'][lb]:>13.3f}" for lb, _ in RATIOS))
    return "\n".join(lines)
