"""Each request of a load level, one JSON object a line: what ``vllm bench serve --save-detailed`` keeps as
parallel per-request lists (``input_lens``, ``output_lens``, ``ttfts``, ``itls``, ``latencies``,
``start_times``, ``errors``; vllm/benchmarks/serve.py ``benchmark``) as one record per request, the way
AIPerf's ``profile_export.jsonl`` and GuideLLM's per-request output are loaded (pandas ``read_json(lines=True)``).
Seconds, as vLLM's lists; ``start_time`` is seconds after the window started.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specsweep.analyse.latency import request_latency
from specsweep.record.atomic import atomic_write
from specsweep.record.results import Window, WindowRequest


def request_record(configuration: str, window: Window, request: WindowRequest) -> dict[str, Any]:
    latency = request_latency(request.arrivals_us, request.tokens, request.e2e_s)
    return {
        "configuration": configuration,
        "load": window.label,
        "window": window.window,
        "index": request.index,
        "prompt_index": request.prompt_index,
        "category": request.category,
        "start_time": request.sent_s,
        "input_len": request.prompt_tokens,
        "output_len": request.tokens,
        "ttft": latency.ttft_s,
        "itl": list(latency.itl_s),
        "latency": request.e2e_s,
        "error": request.flagged,  # why the token count disagrees with the stream: counted as failed
        "spec_decode_draft_tokens": request.drafted,
        "spec_decode_accepted_tokens": request.accepted,
        "text_sha256": request.text_sha256,
    }


def write_requests(path: Path, configuration: str, windows: Sequence[Window]) -> None:
    lines = (json.dumps(request_record(configuration, w, r)) for w in windows for r in w.requests)
    atomic_write(path, "".join(line + "\n" for line in lines))
