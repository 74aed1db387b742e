"""The windows of requests that measure a load level (``specsweep.plan.load_levels``).

The client is one process: one thread per request in flight, each blocked on its socket (no
polling); the open loop's scheduler sleeps until each arrival.

A window is a ramp-up, a steady interval and a drain (``steady_interval``): only the steady interval
is the level's workload (C requests in flight, every slot turned over at least once), so the tables
take throughput and latency from it (docs/load.md, "The steady interval").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specsweep.plan.load_levels import CONCURRENCY, POISSON, Arrivals, LoadLevel, schedule


@dataclass(frozen=True)
class Sent:
    """One request of a window: its index, when it was sent and when it ended (s after the window started),
    its result."""

    index: int
    sent_s: float
    result: Any
    ended_s: float = float("nan")


def steady_interval(level: LoadLevel, sent: list[float], ended: list[float]) -> tuple[float, float]:
    """The steady interval of a window, seconds after it started, from its requests' send and end times.

    It starts when the opening burst has ended: the C-th request to end at concurrency C (every slot has
    turned over once, so requests no longer start and end together), the first to end in the open loop.
    It ends when the last request is sent: from then on fewer requests are in flight (the drain). Empty
    (end <= start) when the window is too short to have one."""
    turned_over = int(level.value) if level.kind == CONCURRENCY else 1
    if len(ended) < turned_over or not sent:
        return 0.0, 0.0
    return sorted(ended)[turned_over - 1], max(sent)


def run_window(
    level: LoadLevel, requests: int, send: Callable[[int], Any], seed: int, arrivals: Arrivals = POISSON
) -> tuple[list[Sent], float]:
    """Send ``requests`` requests at ``level`` (an open loop's gaps shaped by ``arrivals``, a ramp's rate
    rising along it); ``send(i)`` performs request i (blocking) and returns what it measured. Returns the
    requests in index order and the window's duration (first send to last end). The first exception of any
    request is raised after every thread has finished."""
    started = time.perf_counter()
    done: list[Sent] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def one(index: int) -> None:
        sent = time.perf_counter() - started
        try:
            result = send(index)
        except BaseException as error:  # re-raised in the caller's thread
            with lock:
                errors.append(error)
            return
        ended = time.perf_counter() - started
        with lock:
            done.append(Sent(index, sent, result, ended))

    if level.kind == CONCURRENCY:
        pending = iter(range(requests))

        def closed_loop() -> None:
            while not errors:
                with lock:
                    index = next(pending, None)
                if index is None:
                    return
                one(index)

        threads = [threading.Thread(target=closed_loop, daemon=True) for _ in range(int(level.value))]
        for thread in threads:
            thread.start()
    else:
        threads = []
        for index, at in enumerate(schedule(level, requests, seed, arrivals)):
            delay = at - (time.perf_counter() - started)
            if delay > 0:
                time.sleep(delay)  # the scheduler sleeps; requests in flight block on their sockets
            if errors:
                break
            thread = threading.Thread(target=one, args=(index,), daemon=True)
            thread.start()
            threads.append(thread)
    for thread in threads:
        thread.join()
    duration = time.perf_counter() - started
    if errors:
        raise errors[0]
    return sorted(done, key=lambda s: s.index), duration
