"""benchmarks/aiperf_agreement.py reads AIPerf's summary export in vLLM's field names.

The summary is ``profile_export_aiperf.json`` as AIPerf 0.13.0 writes it (aiperf/common/models/export_models.py:
``JsonExportData``, schema 1.4: one ``JsonMetricResult`` {unit, avg, p1 ... p99, ...} per metric tag)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import aiperf_agreement


def metric(unit: str, avg: float, p50: float, p99: float) -> dict:
    return {"unit": unit, "avg": avg, "p50": p50, "p90": p99 * 0.9, "p99": p99, "count": 32}


SUMMARY = {
    "schema_version": "1.4",
    "aiperf_version": "0.13.0",
    "output_token_throughput": {"unit": "tokens/sec", "avg": 142.5},
    "request_count": {"unit": "requests", "avg": 32},
    "time_to_first_token": metric("ms", 31.0, 30.2, 45.1),
    "inter_token_latency": metric("ms", 7.1, 7.0, 8.4),
    "inter_chunk_latency": metric("ms", 7.1, 6.9, 12.3),
    "request_latency": metric("ms", 480.0, 475.0, 530.0),
}


def test_aiperfs_metrics_in_vllms_names():
    found = {
        field: aiperf_agreement._metric(SUMMARY, tag, stat) for (tag, stat), field in aiperf_agreement.FIELDS.items()
    }
    assert found == {
        "output_throughput": 142.5,
        "median_ttft_ms": 30.2,
        "p99_ttft_ms": 45.1,
        "median_tpot_ms": 7.0,  # AIPerf's inter_token_latency is (latency - TTFT) / (tokens - 1): vLLM's TPOT
        "p99_tpot_ms": 8.4,
        "median_itl_ms": 6.9,  # its inter_chunk_latency: the gaps between chunks, vLLM's ITL
        "p99_itl_ms": 12.3,
        "completed": 32,
    }
    assert aiperf_agreement._metric({}, "time_to_first_token", "p50") is None
