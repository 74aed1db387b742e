"""specsweep's load client against another benchmark client on one running server: the same prompts, levels and
output length, and per level the ratio specsweep ÷ other of output tok/s, TTFT, TPOT and ITL p50/p99.

specsweep is run as a user runs it: the workflow, with the server as an ``external`` endpoint (plain OpenAI
``/v1/completions``, as the other clients use), one window per concurrency level, and its figures read from
``results/bench_serve.json`` (``vllm bench serve``'s field names and definitions, report/benchserve.py), so a
ratio compares measurements, not definitions. The two clients take turns on the server in interleaved pairs
of windows (``interleaved``), and each ratio is given with its interval over the pairs (``ratio_rows``). Used
by aiperf_agreement.py (CPU, ``make bench``), vllm_bench_agreement.py and sglang_bench_agreement.py (GPU).
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import yaml
from common import REPO, snakemake_argv

from specsweep.maths.stats import t_critical
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


def interleaved(
    levels: Sequence[int],
    pairs: int,
    ours: Callable[[int, int], dict],
    theirs: Callable[[int, int], dict],
    fresh: Callable[[], None] = lambda: None,
) -> dict[int, list[tuple[dict, dict]]]:
    """``pairs`` pairs of windows per level, one window per client each, in the order A B, B A, A B, ...:
    a drift of the server (two identical back-to-back windows differed by 10-13 % on the H200) then falls on
    both clients alike instead of on whichever runs second. ``fresh()`` runs before every window: the engine's
    prefix-cache flush, since both clients send the same prompts and the second window of each pair found
    them cached (SGLang on the H200: the second window 10-18 % faster whichever client sent it).
    ``ours(level, pair)``/``theirs(level, pair)`` measure one window each; returns each level's
    (specsweep, other) results, pair by pair."""
    found: dict[int, list[tuple[dict, dict]]] = {}
    for level in levels:
        for pair in range(pairs):
            order = (ours, theirs) if pair % 2 == 0 else (theirs, ours)
            measured = {}
            for client in order:
                fresh()
                measured[client] = client(level, pair)
            found.setdefault(level, []).append((measured[ours], measured[theirs]))
    return found


def ratio_rows(pairs_by_level: dict[int, list[tuple[dict, dict]]]) -> list[dict]:
    """One row per level: each ratio specsweep ÷ other as the geometric mean over the pairs, with its 95 %
    Student-t interval over the pairs' log ratios (the pair is the replicate: each pair saw the server in one
    state); within target when the whole interval lies in 1 ± TARGET. One pair carries no interval."""
    rows = []
    for level in sorted(pairs_by_level):
        pairs = pairs_by_level[level]
        ratios, intervals = {}, {}
        for label, key in RATIOS:
            logs = np.log([_ratio(a.get(key), b.get(key)) for a, b in pairs])
            ratios[label], intervals[label] = _geometric_interval(logs)
        known = [iv for iv in intervals.values() if not math.isnan(iv[0])]
        rows.append(
            {
                "concurrency": level,
                "pairs": len(pairs),
                "requests": pairs[0][0].get("completed"),
                "ratios": ratios,
                "intervals": intervals,
                "specsweep": [{key: a.get(key) for _, key in RATIOS} for a, _ in pairs],
                "other": [{key: b.get(key) for _, key in RATIOS} for _, b in pairs],
                "within_target": len(known) == len(RATIOS)
                and all(low >= 1 - TARGET and high <= 1 + TARGET for low, high in known),
            }
        )
    return rows


def _geometric_interval(logs: np.ndarray) -> tuple[float, tuple[float, float]]:
    logs = logs[np.isfinite(logs)]
    if not len(logs):
        return float("nan"), (float("nan"), float("nan"))
    centre = float(np.exp(logs.mean()))
    if len(logs) < 2:
        return centre, (float("nan"), float("nan"))
    half = t_critical(len(logs) - 1) * logs.std(ddof=1) / math.sqrt(len(logs))
    return centre, (float(np.exp(logs.mean() - half)), float(np.exp(logs.mean() + half)))


def _ratio(a: float | None, b: float | None) -> float:
    return a / b if a and b else float("nan")


def table(rows: list[dict], other: str) -> str:
    """Each ratio with its 95 % interval over the pairs; `*` marks an interval inside 1 ± TARGET."""
    lines = [
        f"specsweep ÷ {other}: geometric mean over interleaved pairs of windows, [95 % interval over the pairs]; "
        f"* = interval inside 1 ± {TARGET}",
        f"{'level':<6}{'pairs':>6}" + "".join(f"{label:>24}" for label, _ in RATIOS),
    ]
    for row in rows:
        cells = []
        for label, _ in RATIOS:
            low, high = row["intervals"][label]
            inside = "*" if low >= 1 - TARGET and high <= 1 + TARGET else " "
            span = f"[{low:.3f}-{high:.3f}]" if not math.isnan(low) else "[no interval]"
            cells.append(f"{row['ratios'][label]:>8.3f} {span:>14}{inside}")
        lines.append(f"{'c' + str(row['concurrency']):<6}{row['pairs']:>6}" + "".join(f"{c:>24}" for c in cells))
    if any(row["pairs"] < 2 for row in rows):
        lines.append("a level with one pair carries no interval: one window per client cannot tell ±3 % from noise")
    return "\n".join(lines)
