"""Write a synthetic SGLang 0.5.10-style server log of a given size (formats: shared engine-formats note).

Per simulated request: one Prefill batch line, a dozen Decode batch lines (every 40 forwards of a
~500-token generation, speculative fields on) and one uvicorn access line, as SGLang logs them at
the default level; every 500th request adds a warning. Deterministic for a given size.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

START = dt.datetime(2026, 11, 29, 7, 46, 11)


def request_block(index: int, rng: random.Random) -> str:
    stamp = (START + dt.timedelta(seconds=index)).strftime("%Y-%m-%d %H:%M:%S")
    running = rng.randint(1, 64)
    lines = [
        f"[{stamp} DP0 TP0] Prefill batch, #new-seq: 1, #new-token: {rng.randint(8, 900)}, "
        f"#cached-token: {rng.randint(0, 64)}, token usage: 0.{rng.randint(10, 99)}, #running-req: {running}, "
        f"#queue-req: {rng.randint(0, 9)}, cuda graph: False, input throughput (token/s): "
        f"{rng.uniform(100, 9000):.2f}"
    ]
    for _ in range(12):
        length = rng.uniform(1.5, 4.5)
        lines.append(
            f"[{stamp} DP0 TP0] Decode batch, #running-req: {running}, #token: {rng.randint(1000, 90000)}, "
            f"token usage: 0.{rng.randint(10, 99)}, accept len: {length:.2f}, accept rate: "
            f"{length / 5:.2f}, cuda graph: True, gen throughput (token/s): {rng.uniform(30, 4000):.2f}, "
            f"#queue-req: {rng.randint(0, 9)}"
        )
    lines.append(f'INFO:     127.0.0.1:{rng.randint(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK')
    if index % 500 == 0:
        lines.append(f"[{stamp} DP0 TP0] WARNING: the KV cache is {rng.randint(80, 99)} % full")
    return "\n".join(lines) + "\n"


def write(path: Path, size_bytes: int) -> int:
    """Write whole request blocks until the file reaches size_bytes; returns the bytes written."""
    rng = random.Random(20261129)
    # The same 997 blocks repeat: generation stays fast, the parser still sees varied numbers.
    blocks = [request_block(i, rng).encode() for i in range(997)]
    written = 0
    with open(path, "wb", buffering=1 << 20) as handle:
        index = 0
        while written < size_bytes:
            block = blocks[index % len(blocks)]
            handle.write(block)
            written += len(block)
            index += 1
    return written
