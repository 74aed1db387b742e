"""Run records for tests: the fields a test cares about, the rest at fixed placeholder values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specsweep.record.results import Run


def run_record(data: dict[str, Any], index: int = 0) -> Run:
    return Run.from_json({"run": index, "prompt_index": 0, "tokens": 500, "text_sha256": "t", **data})


def runs_of(records: dict[str, list[dict[str, Any]]]) -> dict[str, list[Run]]:
    return {name: [run_record(r, i) for i, r in enumerate(rs)] for name, rs in records.items()}


def write_session(
    folder: Path, configuration: dict[str, Any], rates: list[float], extra: dict[str, Any] | None = None
) -> None:
    """A configuration's results folder as a session leaves it: launch.json and one run file per decode rate
    (``extra``: more launch fields, e.g. the benchmark; ``excluded`` in it: run index -> exclusion reason)."""
    extra = dict(extra or {})
    excluded = extra.pop("excluded", {})
    (folder / "runs").mkdir(parents=True)
    launch = {"configuration": configuration, "argv": ["llama-server"], "port": 8080, "host": "127.0.0.1"}
    launch |= {"env_set": {}, "env": {}, "launched_at": "t", **extra}
    (folder / "launch.json").write_text(json.dumps(launch))
    for i, rate in enumerate(rates):
        record = {"run": i, "prompt_index": 0, "tokens": 500, "text_sha256": "t", "started_at": f"t{i}"}
        record |= {"client": {"decode_tokens_per_s": rate}}
        if i in excluded:
            record["excluded"] = excluded[i]
        (folder / "runs" / f"run_{i}.json").write_text(json.dumps(record))
