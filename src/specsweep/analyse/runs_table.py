"""runs.csv: one row per measured run, each column described in ``RUNS_COLUMNS`` (docs/runs.md gives the same
table)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import pandas as pd

from specsweep.analyse import energy
from specsweep.plan.config import Configuration
from specsweep.record.rates import SINGLE_REQUEST_DECODE
from specsweep.record.results import ClientTimings, Run

RUNS_COLUMNS: dict[str, str] = {
    "configuration": "configuration name (the one of summary.csv)",
    "session": "the session (server launch) the run was measured in: its results folder, results/<session>/ "
    "(the configuration's own name for its first session, <configuration>-s<k> for session k)",
    "run": "run index within the session, 0-based, in the order measured",
    "prompt_index": "0-based index of the prompt in benchmark.prompts (blank lines and # comments skipped): run i "
    "uses prompt i modulo the number of prompts, so one index is one text in every configuration",
    "category": "the prompt's category in the dataset (benchmark.prompts as JSONL; one category for a plain file)",
    "tokens": "tokens the engine generated (the prompt's max_tokens in a dataset, else benchmark.max_tokens)",
    "ttft_ms": "time to first token as the client saw it (ms)",
    "decode_ms": "first to last content event (ms)",
    "e2e_ms": "request sent to response complete (ms)",
    "decode_tok_s": f"{SINGLE_REQUEST_DECODE.label}, client-measured: (tokens - 1) / decode time (the first "
    "token is TTFT's)",
    "itl_median_ms": "median interval between content events (ms); an event may carry several tokens",
    "itl_p90_ms": "90th percentile of that interval (ms)",
    "content_events": "stream events that carried generated text",
    "engine_decode_tok_s": "the engine's own decode throughput for this request (llama.cpp "
    "timings.predicted_per_second; empty where the engine reports none)",
    "drafted": "draft tokens proposed during this run (0 when a speculative server drafted nothing; empty without "
    "speculation, or when the engine did not report them)",
    "accepted": "draft tokens accepted during this run",
    "verify_steps": "verification steps during this run",
    "speculation_source": "where the counts came from: the response's own fields or Prometheus counter deltas "
    "around the run; 'refused: why' when they were impossible (a counter that fell, more accepted than drafted): "
    "the counts are then empty and in no total",
    "excluded": "why the run is left out of the statistics (the client's decode rate disagreed with the engine's "
    "own beyond benchmark.rate_tolerance_pct, or could not be timed); empty when it counts",
    **energy.RUN_COLUMNS,  # energy, clocks and contention while the run was measured (analyse/energy.py)
}


# The run record's client timings (seconds) as runs.csv columns: every table gives durations in milliseconds
# and the decode rate under the one name every table uses for it (decode_tok_s).
CLIENT_COLUMNS = {
    "ttft_s": ("ttft_ms", 1000.0),
    "decode_s": ("decode_ms", 1000.0),
    "e2e_s": ("e2e_ms", 1000.0),
    "decode_tokens_per_s": ("decode_tok_s", 1.0),
    "itl_median_s": ("itl_median_ms", 1000.0),
    "itl_p90_s": ("itl_p90_ms", 1000.0),
}


def client_columns(client: ClientTimings) -> dict[str, Any]:
    """runs.csv's columns of a run's client timings (CLIENT_COLUMNS)."""
    out: dict[str, Any] = {}
    for key, value in asdict(client).items():
        name, scale = CLIENT_COLUMNS.get(key, (key, None))
        out[name] = value * scale if scale is not None and value is not None else value
    return out


def runs_table(runs: dict[str, list[Run]], configurations: Mapping[str, Configuration] | None = None) -> pd.DataFrame:
    """runs.csv: per run, which prompt, the client's timings, the engine's own decode rate, the speculation
    counts (empty without speculation or when the engine did not report them) and why the run is left out
    of the statistics (empty when it counts)."""
    of = {name: c.session_of or name for name, c in (configurations or {}).items()}
    rows = [
        {
            "configuration": of.get(name, name),
            "session": name,
            "run": r.run,
            "prompt_index": r.prompt_index,
            "category": r.category,
            "tokens": r.tokens,
            **client_columns(r.client),
            "engine_decode_tok_s": r.engine.get("timings", {}).get("predicted_per_second"),
            **(
                {
                    "drafted": r.speculation.drafted,
                    "accepted": r.speculation.accepted,
                    "verify_steps": r.speculation.verify_steps,
                    "speculation_source": r.speculation.source,
                }
                if r.speculation
                else {"speculation_source": f"refused: {r.speculation_refused}"}
                if r.speculation_refused
                else {}
            ),
            "excluded": r.excluded,
            **energy.run_columns(r),
        }
        for name, records in runs.items()
        for r in sorted(records, key=lambda r: r.run)
    ]
    return pd.DataFrame(rows).reindex(columns=list(RUNS_COLUMNS))
