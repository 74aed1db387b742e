"""A stand-in for llama-server that misbehaves on demand (the faults a real engine will not show at will).

It speaks just enough of llama-server's HTTP API for specsweep's llamacpp adapter: ``/health``,
``/props``, ``/slots``, ``/metrics`` and a streamed ``/completion``, and takes llama-server's
``--host``/``--port``/``-m`` flags (every other flag is accepted and ignored; ``/props`` reports the last
``-m``, as llama-server does). Standard library only.

Faults are chosen with ``STANDIN_MODE`` (comma-separated; the environment, as a configuration's
``env:`` would set it):

- ``exit-at-start``: log an error and exit 1 before binding.
- ``hang-before-ready``: listen, but ``/health`` answers 503 (loading) for ever.
- ``stall-mid-stream[=N]``: stop sending, connection open, after ``STANDIN_AFTER`` events (from the N-th
  ``/completion`` on; warmups count).
- ``drop-connection``: close the socket after ``STANDIN_AFTER`` events.
- ``die-during=N``: SIGKILL itself half-way through the N-th ``/completion`` (warmups count).
- ``fill-disk-during=N``: half-way through the N-th ``/completion``, write ``STANDIN_FILL`` (a path)
  until the disk is full, then SIGKILL itself (a session failing on a full disk).
- ``fork-worker``: fork a worker process (same process group) that sleeps, ignoring SIGTERM.
- ``ignore-sigterm``: ignore SIGTERM (only SIGKILL stops it).
- ``term-stops-listening``: on the first SIGTERM or SIGINT stop listening but keep each stream open and silent (as
  a server shutting down while a request waits on its stopped queue); a second one exits.
- ``keep-alive``: after ``STANDIN_AFTER`` events send only SSE comments (``: keep-alive``), every 0.2 s, for ever.
- ``bad-json``: interleave malformed ``data:`` lines in the stream and ``/metrics``.
- ``slow-bind=S``: wait S seconds before binding the port (a loading engine).
- ``token-delay=S``: S seconds per generated token instead of 2 ms (a session that lasts).
- ``big-counters``: speculation counters past 10^6 in ``/metrics``, printed with 6 significant digits as
  llama-server prints them, and ``draft_n``/``draft_n_accepted`` in the final ``timings``.
- ``falling-counters``: speculation counters in ``/metrics`` that fall by 222 drafts with every ``/completion``
  (an engine that restarted or reset them between two scrapes), even without speculation.
- ``overaccept``: the final ``timings`` claim 50 drafts accepted of 10 drafted.
- ``tokens-per-event=K``: every event after the first carries K tokens (the last the rest), as a
  speculative burst does; the final count agrees with the stream.
- ``capacity=R``: serve one ``/completion`` at a time, each taking 1/R s (its events spread evenly over it),
  the rest waiting in turn: a server of exactly R requests/s whose queue grows above that rate.
- ``overclaim=F``: the stream carries n // F of the n tokens asked for (4 of 16 with F=4), the final event
  claims all n (a count that disagrees with the stream).

Flags it heeds besides those: ``--no-slots`` makes ``/slots`` answer 501 with an error object, as llama-server
does. ``POST /apply-template`` renders ``<|user|>CONTENT<|end|>``.

``LLAMA_API_KEY``: require it (``Authorization: Bearer``) everywhere but ``/health``, as llama-server does.
``STANDIN_STARTED`` (a path): touch it once listening, so a test can wait for the server.
``STANDIN_ONLY_IF`` (a path): misbehave only while that file exists (a fault that a rerun no longer meets).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODES = dict(([*part.split("=", 1), ""])[:2] for part in os.environ.get("STANDIN_MODE", "").split(",") if part)
if os.environ.get("STANDIN_ONLY_IF") and not os.path.exists(os.environ["STANDIN_ONLY_IF"]):
    MODES = {}
AFTER = int(os.environ.get("STANDIN_AFTER", "3"))
COMPLETIONS = 0
SERVING = threading.Lock()  # capacity=R: one completion at a time
MODEL = ["standin.gguf"]  # the last -m/--model given, as llama-server's /props reports it
NO_SLOTS = "--no-slots" in sys.argv
STOPPING: list[int] = []  # term-stops-listening: the signals received


def log(text: str) -> None:
    print(f"standin: {text}", flush=True)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: object) -> None:
        log(fmt % args)

    def _json(self, status: int, data: object) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _refused(self) -> bool:
        """With LLAMA_API_KEY set, every path but /health needs ``Authorization: Bearer KEY`` and answers 401
        otherwise, as llama-server b11434 does (tools/server/server-http.cpp middleware_validate_api_key)."""
        key = os.environ.get("LLAMA_API_KEY")
        if not key or self.path == "/health" or self.headers.get("Authorization", "") in (key, f"Bearer {key}"):
            return False
        log(f"401 {self.path} (no valid API key)")
        self._json(401, {"error": {"message": "Invalid API Key", "type": "authentication_error", "code": 401}})
        return True

    def do_GET(self) -> None:
        loading = "hang-before-ready" in MODES
        if self._refused():
            return
        if self.path == "/health":
            self._json(503 if loading else 200, {"status": "loading model" if loading else "ok"})
        elif self.path == "/props":
            self._json(200, {"build_info": "standin", "model_path": MODEL[0], "total_slots": 1})
        elif self.path == "/slots" and NO_SLOTS:  # tools/server: "This server does not support slots endpoint."
            self._json(
                501,
                {
                    "error": {
                        "code": 501,
                        "message": "This server does not support slots endpoint.",
                        "type": "not_supported_error",
                    }
                },
            )
        elif self.path == "/slots":
            self._json(200, [{"id": 0, "speculative": False}])
        elif self.path == "/metrics":
            text = "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 12\n"
            if "big-counters" in MODES:  # past 10^6, as llama-server prints them: 6 significant digits
                steps = 1234567 + 155 * COMPLETIONS
                text += (
                    f"llamacpp:spec_decode_num_drafts_total {steps:g}\n"
                    f"llamacpp:spec_decode_num_draft_tokens_total {3 * steps:g}\n"
                    f"llamacpp:spec_decode_num_accepted_tokens_total {2 * steps:g}\n"
                )
            if "falling-counters" in MODES:
                left = 100000 - 222 * COMPLETIONS
                text += (
                    f"llamacpp:spec_decode_num_drafts_total {left // 3}\n"
                    f"llamacpp:spec_decode_num_draft_tokens_total {left}\n"
                    f"llamacpp:spec_decode_num_accepted_tokens_total {left // 2}\n"
                )
            if "bad-json" in MODES:
                text += "llamacpp:garbage{ 1 2 3\n"
            body = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        global COMPLETIONS
        payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self._refused():
            return
        if self.path == "/apply-template":
            self._json(200, {"prompt": "".join(f"<|user|>{m['content']}<|end|>" for m in payload["messages"])})
            return
        if self.path != "/completion":
            self._json(404, {"error": "not found"})
            return
        COMPLETIONS += 1
        n = int(payload.get("n_predict", 16))
        log(f"completion {COMPLETIONS}: {n} tokens")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        # the tokens each event carries: one, or the first alone and K per event after it; of n // F in all
        # with overclaim=F (the final event still claims n)
        burst, shown = int(MODES.get("tokens-per-event") or 1), n // int(MODES.get("overclaim") or 1)
        carried = [1] + [min(burst, shown - i) for i in range(1, shown, burst)] if shown else []
        capacity = float(MODES.get("capacity") or 0)
        with SERVING if capacity else contextlib.nullcontext():
            self._stream(n, carried, 1.0 / capacity / max(len(carried), 1) if capacity else None)

    def _stream(self, n: int, carried: list[int], event_s: float | None) -> None:
        """The events of a completion, then its final one; ``event_s``: seconds per event (capacity=R)."""
        sent: list[float] = []
        started = time.perf_counter()
        for i, tokens in enumerate(carried):
            if i == AFTER and "stall-mid-stream" in MODES and int(MODES["stall-mid-stream"] or 0) <= COMPLETIONS:
                log("stalling mid-stream")
                time.sleep(3600)
            if i == AFTER and "keep-alive" in MODES:
                log("sending keep-alive comments only")
                while True:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    time.sleep(0.2)
            while STOPPING:
                time.sleep(0.1)  # silent, connection open
            if i == AFTER and "drop-connection" in MODES:
                log("dropping the connection")
                self.connection.shutdown(2)
                self.close_connection = True
                return
            if i == n // 2 and MODES.get("fill-disk-during") == str(COMPLETIONS):
                with contextlib.suppress(OSError), open(os.environ["STANDIN_FILL"], "wb") as filler:
                    while True:
                        filler.write(bytes(4096))
                        filler.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            if i == n // 2 and MODES.get("die-during") == str(COMPLETIONS):
                log("dying with SIGKILL mid-request")
                os.kill(os.getpid(), signal.SIGKILL)
            if "bad-json" in MODES:
                self.wfile.write(b"data: {not json\n\ndata: [1, 2]\n\n")
            event = {"content": "x" * tokens, "tokens": list(range(tokens)), "stop": False}
            self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
            self.wfile.flush()
            sent.append(time.perf_counter())
            if event_s is not None:  # paced on the completion's own clock: a late wake-up on a busy machine is
                # made up by the next event, so the capacity stays 1/R s a completion and not 1/R plus the delays
                time.sleep(max(0.0, started + (i + 1) * event_s - time.perf_counter()))
            else:  # an event of K tokens takes K token times
                time.sleep(tokens * float(MODES.get("token-delay") or 0.002))
        # its own clock, as llama.cpp's: (n - 1) tokens from the first token to the last
        predicted_ms = 1000.0 * (sent[-1] - sent[0]) if len(sent) > 1 else 0.0
        final = {
            "content": "",
            "stop": True,
            "stop_type": "limit",
            "tokens_predicted": n,
            "tokens_evaluated": 4,
            "timings": {
                "predicted_n": n,
                "predicted_ms": predicted_ms,
                "predicted_per_second": 1000.0 * (n - 1) / predicted_ms if predicted_ms else None,
                **({"draft_n": 12, "draft_n_accepted": 8} if "big-counters" in MODES else {}),
                **({"draft_n": 10, "draft_n_accepted": 50} if "overaccept" in MODES else {}),
            },
        }
        self.wfile.write(b"data: " + json.dumps(final).encode() + b"\n\n")
        self.wfile.flush()
        self.close_connection = True


def main(argv: list[str]) -> int:
    host, port = "127.0.0.1", 8080
    for flag, value in itertools.pairwise(argv):
        if flag == "--host":
            host = value
        elif flag == "--port":
            port = int(value)
        elif flag in ("-m", "--model"):
            MODEL[0] = value
    log(f"argv {argv}")
    if "exit-at-start" in MODES:
        log("error: failed to load model (exit-at-start)")
        return 1
    if "ignore-sigterm" in MODES:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "fork-worker" in MODES and os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    time.sleep(float(MODES.get("slow-bind") or 0))
    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as error:
        log(f"couldn't bind HTTP server socket, hostname: {host}, port: {port}: {error}")
        return 1
    server.daemon_threads = True
    if "term-stops-listening" in MODES:

        def stop_listening(signum: int, frame: object) -> None:
            STOPPING.append(signum)
            if len(STOPPING) > 1:
                os._exit(1)
            log(f"received signal {signum}: no longer listening")
            server.socket.close()

        signal.signal(signal.SIGTERM, stop_listening)
        signal.signal(signal.SIGINT, stop_listening)
    log(f"listening on http://{host}:{port}")
    if started := os.environ.get("STANDIN_STARTED"):
        open(started, "w").close()
    with contextlib.suppress(OSError, ValueError):  # term-stops-listening closes the socket under it
        server.serve_forever()
    while STOPPING:  # streams stay open until a second signal
        time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
