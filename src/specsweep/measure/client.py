"""A light streaming HTTP client: one process, blocking reads, monotonic clock.

The client must not disturb what it measures (on 2 cores a heavy benchmark client cut
llama-server from ~65 to ~1 tok/s), so it blocks on the socket between chunks instead of
polling, and timestamps each server-sent event with ``time.perf_counter`` (monotonic).
"""

from __future__ import annotations

import http.client
import itertools
import json
import statistics
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from specsweep.record.results import ClientTimings


class RequestError(RuntimeError):
    pass


@dataclass
class StreamedResponse:
    """Arrival times of the server-sent events of one request, relative to sending it."""

    events: list[dict[str, Any]] = field(default_factory=list)
    arrivals_s: list[float] = field(default_factory=list)
    total_s: float = 0.0
    malformed: int = 0  # data: lines that were not a JSON object


def parse_event(data: bytes) -> dict[str, Any] | None:
    """One server-sent event's JSON object, or None when it is not one (never raises)."""
    try:
        event = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


def stream_post(
    base_url: str, path: str, payload: dict[str, Any], timeout_s: float, headers: dict[str, str] | None = None
) -> StreamedResponse:
    """POST ``payload`` as JSON and collect every ``data:`` event of the SSE response.

    ``timeout_s`` bounds the wait for each read, so a stalled stream fails instead of hanging.
    """
    url = urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout_s)
    body = json.dumps(payload).encode()
    result = StreamedResponse()
    try:
        started = time.perf_counter()
        connection.request(
            "POST",
            path,
            body=body,
            headers={"Content-Type": "application/json", "Accept": "text/event-stream", **(headers or {})},
        )
        response = connection.getresponse()
        if response.status != 200:
            detail = response.read(2000).decode(errors="replace")
            raise RequestError(f"POST {path} answered {response.status}: {detail}")
        while line := response.readline():
            now = time.perf_counter()
            text = line.strip()
            if not text.startswith(b"data:"):
                continue
            data = text[5:].strip()
            if data == b"[DONE]":
                break
            event = parse_event(data)
            if event is None:
                result.malformed += 1  # kept as a count in the run record, never a crash
                continue
            result.events.append(event)
            result.arrivals_s.append(now - started)
        result.total_s = time.perf_counter() - started
    except (OSError, http.client.HTTPException) as error:
        raise RequestError(f"POST {base_url}{path} failed after {len(result.events)} events: {error!r}") from error
    finally:
        connection.close()
    return result


def timings_from_arrivals(arrivals_s: list[float], tokens: int, total_s: float) -> ClientTimings:
    """Derive client timings from the arrival times of the events that carried generated text.

    decode rate = (tokens - 1) / (last arrival - first arrival): the first token's time is
    the TTFT; the remaining tokens arrive over the decode interval. An event may carry several
    tokens (speculative decoding emits bursts), so inter-token latency is per event.
    """
    if not arrivals_s:
        raise ValueError("no event carried generated text")
    first, last = arrivals_s[0], arrivals_s[-1]
    gaps = [b - a for a, b in itertools.pairwise(arrivals_s)]
    decode_s = last - first
    rate = (tokens - 1) / decode_s if decode_s > 0 and tokens > 1 else float("nan")
    p90 = statistics.quantiles(gaps, n=10)[-1] if len(gaps) >= 2 else (gaps[0] if gaps else float("nan"))
    return ClientTimings(
        ttft_s=first,
        decode_s=decode_s,
        e2e_s=total_s,
        decode_tokens_per_s=rate,
        itl_median_s=statistics.median(gaps) if gaps else float("nan"),
        itl_p90_s=p90,
        content_events=len(arrivals_s),
    )
