"""Run every benchmark of specsweep itself, print the table and write benchmarks/results.json.

    .venv/bin/python benchmarks/run_all.py [--repeat N] [--default]    (make bench)

--default also measures the overhead of the default sweep once (about 5 minutes of measuring; `make bench`
passes it), whose 30 runs are then the main fidelity sample.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
import aiperf_agreement
import choose
import client_load
import coverage
import fidelity
import level_choice
import load_coverage
import overhead
import power
import scale
import sequential
import telemetry_overhead
import winner
from common import REPO, machine

OUT = REPO / "benchmarks" / "results.json"
T = TypeVar("T")


def table(result: dict) -> str:
    fid = result["fidelity"]
    lines = [f"machine: {result['machine']}", "", f"{'measure':<58} {'figure':>18} {'target':>10}", "-" * 88]

    def row(name: str, figure: str, target: str) -> None:
        lines.append(f"{name:<58} {figure:>18} {target:>10}")

    for f in fid:
        row(
            f"decode tok/s client/engine, median ({f['runs']} runs, {Path(f['results']).name})",
            f"{f['decode_ratio_median']:.5f}",
            "1 ± 0.005",
        )
        row("  worst run", f"{f['decode_ratio_worst']:.5f}", "")
        row(
            "  TTFT - prompt_ms, median / max (ms)",
            f"{f['ttft_minus_prompt_ms_median']:.1f} / {f['ttft_minus_prompt_ms_max']:.1f}",
            "",
        )
    for level in result["load_client"]["fidelity"]["levels"]:
        row(
            f"load client decode rate ÷ engine, median, concurrency {level['concurrency']} ({level['requests']} req)",
            f"{level['ratio_median']:.5f}",
            "1 ± 0.005",
        )
    cap = result["load_client"]["capacity"]
    row(
        f"load client capacity, {cap['streams']} streams: events/s, median timing error ≤ 0.5 %",
        f"{cap['highest_events_per_s']}",
        "report",
    )
    over = result["overhead"]
    small = over["small_ratio"]
    row(
        f"wall ÷ engine time, small sweep (n={small['n']}: median [min, max])",
        f"{small['median']:.2f} [{small['min']:.2f}, {small['max']:.2f}]",
        "≤ 1.02",
    )
    row("  overhead seconds (median)", f"{over['small_overhead_s']['median']:.1f}", "")
    if "default" in over:
        row("wall ÷ engine time, default sweep (once)", f"{over['default']['ratio']:.3f}", "≤ 1.02")
    plan, agg = result["scale"]["plan"], result["scale"]["aggregate"]
    row(
        f"dry-run plan, {plan['configurations']} configurations (s / peak MiB)",
        f"{plan['wall_s']:.1f} / {plan['peak_rss_mib']:.0f}",
        "≤ 10 s",
    )
    parses = result["scale"]["parse"]
    for p in parses:
        row(
            f"SGLang log parse, {p['size_mb']:.0f} MB, {p['workers']} process(es) (MB/s / peak MiB)",
            f"{p['mb_per_s']:.1f} / {p['peak_rss_mib']:.0f}",
            "≥ 100",
        )
    for workers in dict.fromkeys(p["workers"] for p in parses):
        small_log, large_log = sorted((p for p in parses if p["workers"] == workers), key=lambda p: p["size_mb"])
        row(
            f"  linearity, {workers} process(es): s per MB, 1 GB ÷ 100 MB",
            f"{(large_log['seconds'] / large_log['size_mb']) / (small_log['seconds'] / small_log['size_mb']):.3f}",
            "≈ 1",
        )
    row(f"aggregate {agg['runs']} runs (s / peak MiB)", f"{agg['seconds']:.1f} / {agg['peak_rss_mib']:.0f}", "≤ 5 s")
    for name, figure, target in load_coverage.lines(result["load_coverage"]):
        lines.append(f"{name:<72} {figure:>18} {target:>12}")
    for c in result["coverage"]:
        where = f"{100 * c['launch_sd']:.0f} % launch offsets, {c['sessions']} sessions, {c['sweeps']} sweeps" + (
            f", first session +{100 * c['first_session_boost']:.0f} %" if c.get("first_session_boost") else ""
        )
        row(f"coverage, {where}: tok/s, speedup, per category", _coverage(c), "95 ± 2 %")
        row("  best's interval; family-wise false positives (A/A, 3 comparisons)", _familywise(c), "≤ 5 %")
        if "aa_test_false_alarm" in c:
            row(
                f"  A/A sweeps the real A/A test fails (Holm p < {coverage.AA_TEST_P:g})",
                _percent(c["aa_test_false_alarm"]),
                "≤ 0.3 %",
            )
    for v in result.get("verdicts") or []:
        row(v["row"], _percent(v["value"]), v["goal"])
    for name, figure, target in (
        power.lines(result["power"])
        + level_choice.lines(result["level_choice"])
        + winner.lines(result["winner"])
        + sequential.lines(result["sequential"])
        + choose.lines(result["choose"])
    ):
        lines.append(f"{name:<84} {figure:>18} {target:>14}")
    if tel := result.get("telemetry"):
        row(
            f"decode tok/s with ÷ without the {tel['rate_hz']:g} Hz sampler, {tel['pairs']} pairs, one session",
            f"{tel['client_ratio']:.4f}",
            "1 ± 0.01",
        )
        row("  engine's own rate, with ÷ without", f"{tel['engine_ratio']:.4f}", "")
    agreement = result["aiperf_agreement"]
    for level in agreement["rows"]:
        row(
            f"specsweep ÷ AIPerf, c{level['concurrency']}, {level['pairs']} interleaved pairs: tok/s, TTFT/TPOT/ITL "
            "p50 p99 [95 % interval over the pairs]",
            " ".join(
                f"{r:.2f} [{lo:.2f}-{hi:.2f}]"
                for r, (lo, hi) in zip(level["ratios"].values(), level["intervals"].values(), strict=True)
            ),
            "interval in 1 ± 0.03",
        )
    return "\n".join(lines)


def _percent(value: float) -> str:
    return "n/a" if value != value else f"{100 * value:.1f}"


def _coverage(c: dict) -> str:
    return " / ".join(
        _percent(c[k]) for k in ("decode_tok_s_coverage", "speedup_coverage", "category_speedup_coverage")
    )


def _familywise(c: dict) -> str:
    return f"{_percent(c['best_speedup_coverage'])}; {_percent(c['familywise_false_positive'])}"


def finished(name: str, measure: Callable[[], T]) -> T:
    """Run one benchmark and print a line as it finishes: the whole table comes only at the end."""
    started = time.perf_counter()
    value = measure()
    print(f"{name}: done in {time.perf_counter() - started:.0f} s", flush=True)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--default", action="store_true")
    args = parser.parse_args()
    small = [
        finished(f"overhead, small sweep {i + 1}", lambda: overhead.measure(overhead.SMALL)) for i in range(args.repeat)
    ]
    over = {
        "small": small,
        "small_ratio": overhead.spread([s["ratio"] for s in small]),
        "small_overhead_s": overhead.spread([s["wall_s"] - s["engine_s"] for s in small]),
    }
    if args.default:
        over["default"] = finished("overhead, default sweep", lambda: overhead.measure(overhead.DEFAULT))
    # fidelity of the sweeps this run measured (a fresh clone has no results/ of its own)
    sweeps = [Path(s["workdir"]) / "results" for s in ([over["default"]] if args.default else []) + small[:1]]
    result = {
        "machine": machine(),
        "fidelity": finished("fidelity", lambda: [fidelity.fidelity(p) for p in sweeps]),
        "overhead": over,
        "load_client": finished(
            "load client", lambda: {"fidelity": client_load.fidelity(), "capacity": client_load.capacity()}
        ),
        "load_coverage": finished("load coverage", load_coverage.measure),
        "aiperf_agreement": finished(
            "AIPerf agreement",
            lambda: aiperf_agreement.measure(Path(tempfile.mkdtemp(prefix="specsweep-aiperf-agreement-"))),
        ),
        "scale": finished(
            "scale",
            lambda: {
                "plan": scale.bench_plan(1000),
                "parse": scale.bench_parse([100, 1000]),
                "aggregate": scale.bench_aggregate(100_000),
            },
        ),
        # summary.csv's intervals under the documented noise (benchmarks/coverage.py, about 90 s)
        "coverage": finished(
            "coverage", lambda: [coverage.measure(1000, sd, first_boost=boost) for sd, boost in coverage.SCENARIOS]
        ),
        # compare, one-session, factorial, effects and energy verdicts (benchmarks/coverage.py verdicts)
        "verdicts": finished("verdicts", lambda: coverage.verdicts(1000)),
        # the smallest detectable difference against simulation (benchmarks/power.py, a few seconds)
        "power": finished("power", power.measure_all),
        # the setting per load level's wrong verdicts (benchmarks/level_choice.py, about 10 s)
        "level_choice": finished("level choice", level_choice.measure_all),
        # the confirmed winner's bias and coverage against the chosen one's bias (benchmarks/winner.py, about 13 s)
        "winner": finished("winner", winner.measure_all),
        # sessions where the answer is open: errors, repeated intervals, sessions saved (benchmarks/sequential.py,
        # about 30 s)
        "sequential": finished("sequential", sequential.measure_all),
        # choosing k per load level: specsweep's search and race against tune_speculative_k's rule
        # (benchmarks/choose.py, about 1 min)
        "choose": finished("choose", choose.measure_all),
        "telemetry": finished("telemetry overhead", telemetry_overhead.measure),
    }
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(table(result))
    print(f"\nwritten to {OUT}")


if __name__ == "__main__":
    main()
