"""A fast synthetic streaming server for the client-capacity benchmark (one process, asyncio).

    python benchmarks/synthetic_server.py PORT

``POST /completion {"n_predict": N, "interval_us": I}`` streams N server-sent events in llama.cpp's
shape, one token each, every I microseconds, then a final event whose ``timings`` hold the
server's own decode rate: (N - 1) / (send time of the last event - send time of the first), each
send time taken right after the event was handed to the kernel. The client's rate for the same
request is then comparable one to one, as with llama-server's ``predicted_per_second``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    headers = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in headers.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    request = json.loads(await reader.readexactly(length))
    tokens, interval = int(request["n_predict"]), int(request["interval_us"]) / 1e6
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
    loop = asyncio.get_running_loop()
    start = loop.time()
    sent: list[float] = []
    for index in range(tokens):
        delay = start + index * interval - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        writer.write(b'data: {"content": "x", "tokens": [1]}\n\n')
        await writer.drain()
        sent.append(time.perf_counter())
    decode_ms = 1000 * (sent[-1] - sent[0])
    timings = {
        "predicted_n": tokens,
        "predicted_ms": decode_ms,
        "predicted_per_second": (tokens - 1) / (decode_ms / 1000) if decode_ms > 0 else None,
    }
    final = {"content": "", "stop": True, "tokens_predicted": tokens, "timings": timings}
    writer.write(b"data: " + json.dumps(final).encode() + b"\n\n")
    await writer.drain()
    writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
