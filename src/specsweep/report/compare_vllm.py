"""``compare`` with a ``vllm bench serve --save-result`` file as the "before": each configuration of the
"after" sweep at the load level the vLLM run used (its ``max_concurrency`` and ``request_rate``, as
specsweep's own files record them: report/benchserve.py), metric by metric, after / before.

vLLM's file is one run with no samples but its aggregates, so no interval or test is possible: the rows
say so, and a model that differs is named. Both sides share vLLM's definitions (TPOT, percentiles,
``output_throughput`` over the whole run, ramp-up and drain included), so the ratios compare like with like.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

import pandas as pd

from specsweep.record.results import ROOT

METRICS = (
    "output_throughput", "request_throughput", "median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "p99_tpot_ms",
    "median_itl_ms", "median_e2el_ms", "spec_decode_acceptance_rate", "spec_decode_acceptance_length",
)  # fmt: skip
ONE_RUN = "vLLM's file is one run (aggregates only): no interval or test"
COLUMNS = ("configuration", "load", "metric", "before", "after", "ratio", "delta_pct", "warnings")
LEVEL_KEYS = ("max_concurrency", "request_rate")


def vllm_result(path: str | Path) -> dict[str, Any] | None:
    """The first result of a vLLM ``--save-result`` file (``--append-result`` adds one a line), or None when
    ``path`` is something else (a results folder, an archive)."""
    path = Path(path)
    if not path.is_file() or path.suffix.lower() != ".json":
        return None
    try:
        first = json.loads(path.read_text().strip().splitlines()[0])
    except (ValueError, IndexError):
        return None
    is_vllm = isinstance(first, dict) and {"backend", "completed", "duration", *LEVEL_KEYS} <= set(first)
    return first if is_vllm else None


def sweep_files(path: str | Path) -> dict[tuple[str, str], dict[str, Any]]:
    """``(configuration, level) -> result`` of the after sweep's results/bench_serve/ (folder or archive)."""
    path = Path(path)
    found: dict[tuple[str, str], dict[str, Any]] = {}

    def keep(name: str, data: bytes) -> None:
        parts = PurePosixPath(name).parts
        if len(parts) >= 3 and parts[-3] == "bench_serve" and not parts[-1].endswith(".pytorch.json"):
            found[(parts[-2], parts[-1].removesuffix(".json"))] = json.loads(data)

    if path.is_dir():
        folder = path / ROOT if (path / ROOT).is_dir() else path
        for member in (folder / "bench_serve").glob("*/*.json"):
            keep(member.relative_to(folder).as_posix(), member.read_bytes())
    elif path.is_file() and tarfile.is_tarfile(path):
        with tarfile.open(path) as archive:
            for member in archive.getmembers():
                if member.isfile() and member.name.endswith(".json") and "/bench_serve/" in f"/{member.name}":
                    keep(member.name, archive.extractfile(member).read())
    return found


def compare(before: dict[str, Any], after: dict[tuple[str, str], dict[str, Any]]) -> pd.DataFrame:
    """One row per configuration and metric, at the after sweep's level matching the vLLM run's."""
    rows = []
    for (configuration, level), result in sorted(after.items()):
        if any(result.get(key) != before.get(key) for key in LEVEL_KEYS):
            continue
        warnings = [ONE_RUN]
        if result.get("model_id") != before.get("model_id"):
            warnings.append(f"model differs: {before.get('model_id')} -> {result.get('model_id')}")
        for metric in METRICS:
            old, new = before.get(metric), result.get(metric)
            if old is None and new is None:
                continue
            ratio = new / old if isinstance(old, int | float) and isinstance(new, int | float) and old else None
            rows.append(
                {
                    "configuration": configuration,
                    "load": level,
                    "metric": metric,
                    "before": old,
                    "after": new,
                    "ratio": ratio,
                    "delta_pct": 100 * (ratio - 1) if ratio is not None else None,
                    "warnings": "; ".join(warnings),
                }
            )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def describe(frame: pd.DataFrame, before: str, after: str, level: str) -> list[str]:
    lines = [f"compare: after = {after}", f"         before = {before} (vllm bench serve, {level})", ONE_RUN]
    if frame.empty:
        lines.append(f"WARNING: no configuration of {after} has a bench_serve file at {level}")
    for row in frame.itertuples():
        change = f"{row.delta_pct:+.1f} %" if pd.notna(row.delta_pct) else "no ratio"
        lines.append(f"{row.configuration} {row.load} {row.metric}: {row.before} -> {row.after} ({change})")
    return lines


def write(before: str, after: str, table: str, figure: str, progress: TextIO) -> None:
    """The compare job with a vLLM file as "before": comparison.csv, its figure, the rows in words."""
    import matplotlib.pyplot as plt

    from specsweep.analyse.aggregate import write_csv
    from specsweep.report import figures

    result = vllm_result(before) or {}
    level = ", ".join(f"{key} {result.get(key)}" for key in LEVEL_KEYS)
    frame = compare(result, sweep_files(after))
    write_csv(frame, table)
    shown = frame.dropna(subset=["delta_pct"])
    axes = plt.subplots(figsize=(8, 1.4 + 0.3 * max(len(shown), 1)))[1]
    axes.barh([f"{r.configuration} {r.metric}" for r in shown.itertuples()], shown["delta_pct"], color="tab:blue")
    axes.axvline(0, color="black", linewidth=0.8)
    axes.invert_yaxis()
    axes.set_xlabel(f"after vs vllm bench serve ({level}), %; {ONE_RUN}")
    figures.save(axes.figure, Path(figure).with_suffix(""))
    for line in describe(frame, before, after, level):
        print(line, file=progress)
