"""Run records for tests: the fields a test cares about, the rest at fixed placeholder values."""

from __future__ import annotations

from typing import Any

from specsweep.record.results import Run


def run_record(data: dict[str, Any], index: int = 0) -> Run:
    return Run.from_json({"run": index, "prompt_index": 0, "tokens": 500, "text_sha256": "t", **data})


def runs_of(records: dict[str, list[dict[str, Any]]]) -> dict[str, list[Run]]:
    return {name: [run_record(r, i) for i, r in enumerate(rs)] for name, rs in records.items()}
