"""``compare`` with a peer tool's one run as the "before": a ``vllm bench serve --save-result`` file, or an
AIPerf ``profile_export_aiperf.json`` read into vLLM's field names (``aiperf_result``). Each configuration of
the "after" sweep at the load level the peer run used (its ``max_concurrency`` and ``request_rate``, as
specsweep's own files record them: report/benchserve.py), metric by metric, after / before.

A peer's file is one run with no samples but its aggregates, so no interval or test is possible: the rows
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
ONE_RUN = "the peer tool's file is one run (aggregates only): no interval or test"
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


# AIPerf's JSON export (aiperf/common/models/export_models.py JsonExportData, schema 1.4, aiperf 0.13.0): its
# metric and statistic for each vLLM field; AIPerf's inter_token_latency is vLLM's TPOT ((latency - TTFT) /
# (tokens - 1)), its inter_chunk_latency vLLM's ITL (benchmarks/aiperf_agreement.py compares the two tools).
AIPERF_FIELDS = {
    "output_throughput": ("output_token_throughput", "avg"),
    "request_throughput": ("request_throughput", "avg"),
    "median_ttft_ms": ("time_to_first_token", "p50"),
    "p99_ttft_ms": ("time_to_first_token", "p99"),
    "median_tpot_ms": ("inter_token_latency", "p50"),
    "p99_tpot_ms": ("inter_token_latency", "p99"),
    "median_itl_ms": ("inter_chunk_latency", "p50"),
    "median_e2el_ms": ("request_latency", "p50"),
}
TO_MS = {"ms": 1.0, "ns": 1e-6, "us": 1e-3, "s": 1e3, "sec": 1e3}


def aiperf_result(path: str | Path) -> dict[str, Any] | None:
    """An AIPerf ``profile_export_aiperf.json`` in a vLLM result's field names (latencies in ms; its level as
    ``max_concurrency``/``request_rate`` from the profiling phase), or None when ``path`` is something else."""
    path = Path(path)
    try:
        data = json.loads(path.read_text()) if path.is_file() and path.suffix.lower() == ".json" else None
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or "aiperf_version" not in data or "output_token_throughput" not in data:
        return None
    phases = (data.get("input_config") or {}).get("phases") or []
    phase = next((p for p in phases if isinstance(p, dict) and p.get("kind") == "profiling"), {})
    closed = phase.get("type") == "concurrency"
    result: dict[str, Any] = {
        "tool": f"AIPerf {data['aiperf_version']}",
        "max_concurrency": phase.get("concurrency") if closed else None,
        "request_rate": "inf" if closed else phase.get("request_rate"),
        "model_id": next(iter(((data.get("input_config") or {}).get("models") or {}).get("items") or []), {}).get(
            "name"
        ),
    }
    for field, (metric, statistic) in AIPERF_FIELDS.items():
        found = data.get(metric) if isinstance(data.get(metric), dict) else {}
        value = found.get(statistic)
        scale = TO_MS.get(str(found.get("unit")), 1.0) if field.endswith("_ms") else 1.0
        result[field] = value * scale if isinstance(value, int | float) else None
    return result


def peer_result(path: str | Path) -> dict[str, Any] | None:
    """A peer tool's one run as the "before": a vLLM --save-result file or an AIPerf export, in vLLM's fields
    (``tool`` says which), or None."""
    if (found := vllm_result(path)) is not None:
        return {"tool": "vllm bench serve", **found}
    return aiperf_result(path)


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


def describe(frame: pd.DataFrame, before: str, after: str, level: str, tool: str = "vllm bench serve") -> list[str]:
    lines = [f"compare: after = {after}", f"         before = {before} ({tool}, {level})", ONE_RUN]
    if frame.empty:
        lines.append(f"WARNING: no configuration of {after} has a bench_serve file at {level}")
    for row in frame.itertuples():
        change = f"{row.delta_pct:+.1f} %" if pd.notna(row.delta_pct) else "no ratio"
        lines.append(f"{row.configuration} {row.load} {row.metric}: {row.before} -> {row.after} ({change})")
    return lines


def write(before: str, after: str, table: str, figure: str, progress: TextIO) -> None:
    """The compare job with a peer tool's file as "before" (vLLM's or AIPerf's): comparison.csv, its figure,
    the rows in words."""
    import matplotlib.pyplot as plt

    from specsweep.analyse.aggregate import write_csv
    from specsweep.report import figures

    result = peer_result(before) or {}
    tool = result.get("tool", "vllm bench serve")
    level = ", ".join(f"{key} {result.get(key)}" for key in LEVEL_KEYS)
    frame = compare(result, sweep_files(after))
    write_csv(frame, table)
    shown = frame.dropna(subset=["delta_pct"])
    axes = plt.subplots(figsize=(8, 1.4 + 0.3 * max(len(shown), 1)))[1]
    axes.barh([f"{r.configuration} {r.metric}" for r in shown.itertuples()], shown["delta_pct"], color="tab:blue")
    axes.axvline(0, color="black", linewidth=0.8)
    axes.invert_yaxis()
    axes.set_xlabel(f"after vs {tool} ({level}), %; {ONE_RUN}")
    figures.save(axes.figure, Path(figure).with_suffix(""))
    for line in describe(frame, before, after, level, tool):
        print(line, file=progress)
