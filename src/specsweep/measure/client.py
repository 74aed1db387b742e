"""A light streaming HTTP client: one process, blocking reads, monotonic clock.

The client must not disturb what it measures (on 2 cores a heavy benchmark client cut
llama-server from ~65 to ~1 tok/s), so it blocks on the socket between chunks instead of
polling, and timestamps each server-sent event with ``time.perf_counter`` (monotonic).
"""

from __future__ import annotations

import contextlib
import contextvars
import http.client
import itertools
import json
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
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


# How the stream's server is doing, asked while a stream has been quiet this long: None while it serves, else why
# it does not (the session's: its process exited, or its port no longer accepts connections).
QUIET_S = 2.0
WATCH_EVERY_S = 0.5
_server_gone: contextvars.ContextVar[Callable[[], str | None] | None] = contextvars.ContextVar(
    "server_gone", default=None
)


@contextlib.contextmanager
def watching(gone: Callable[[], str | None]) -> Iterator[None]:
    """Streams posted inside this block end at once when ``gone()`` names a reason while they are quiet (a server
    stopped by a signal may keep an in-flight stream open, silent, until ``request_timeout_s``)."""
    token = _server_gone.set(gone)
    try:
        yield
    finally:
        _server_gone.reset(token)


def listening(host: str, port: int) -> str | None:
    """None when ``host:port`` accepts a connection, else what happened."""
    try:
        socket.create_connection((host, port), timeout=1.0).close()
    except OSError as error:
        return f"the server no longer accepts connections on {host}:{port} ({error.strerror or error})"
    return None


def stream_post(
    base_url: str,
    path: str,
    payload: dict[str, Any],
    timeout_s: float,
    headers: dict[str, str] | None = None,
    deadline_s: float | None = None,
) -> StreamedResponse:
    """POST ``payload`` as JSON and collect every ``data:`` event of the SSE response.

    ``timeout_s`` bounds the wait for each read, so a stalled stream fails instead of hanging; ``deadline_s`` bounds
    the whole request (a stream kept alive by SSE comments never waits ``timeout_s`` for a read). Inside
    ``watching`` a quiet stream whose server is gone ends at once, saying so.
    """
    url = urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout_s)
    body = json.dumps(payload).encode()
    result = StreamedResponse()
    last_line = [time.perf_counter()]
    ended: list[str] = []  # why the watchdog ended the stream
    done = threading.Event()
    sockets: list[socket.socket] = []  # the response keeps reading it after a closing connection drops it
    gone = _server_gone.get()
    if deadline_s is not None or gone is not None:
        threading.Thread(
            target=_watchdog, args=(sockets, deadline_s, gone, last_line, ended, done), daemon=True
        ).start()
    try:
        started = time.perf_counter()
        connection.request(
            "POST",
            path,
            body=body,
            headers={"Content-Type": "application/json", "Accept": "text/event-stream", **(headers or {})},
        )
        if connection.sock is not None:
            sockets.append(connection.sock)
        response = connection.getresponse()
        if response.status != 200:
            detail = response.read(2000).decode(errors="replace")
            raise RequestError(f"POST {path} answered {response.status}: {detail}")
        while line := response.readline():
            now = last_line[0] = time.perf_counter()
            if ended:
                break
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
        if ended:
            raise RequestError(f"POST {base_url}{path}: {ended[0]}, after {len(result.events)} events") from None
        raise RequestError(f"POST {base_url}{path} failed after {len(result.events)} events: {error!r}") from error
    finally:
        done.set()
        connection.close()
    if ended:
        raise RequestError(f"POST {base_url}{path}: {ended[0]}, after {len(result.events)} events")
    return result


def _watchdog(
    sockets: list[socket.socket],
    deadline_s: float | None,
    gone: Callable[[], str | None] | None,
    last_line: list[float],
    ended: list[str],
    done: threading.Event,
) -> None:
    """Ends the stream (shuts its socket, in ``sockets`` once sent) past ``deadline_s``, or when ``gone`` names a
    reason while the stream is quiet; the reason goes to ``ended``."""
    started = time.perf_counter()
    while not done.wait(WATCH_EVERY_S):
        now = time.perf_counter()
        reason = None
        if deadline_s is not None and now - started > deadline_s:
            reason = (
                f"no end of the stream after {deadline_s:g} s (benchmark/run_timeout_s; a stream kept alive by "
                "SSE comments, or one that never ends); the run is not counted"
            )
        elif gone is not None and now - last_line[0] > QUIET_S:
            reason = gone()
        if reason:
            ended.append(reason)
            for sock in sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            return


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
