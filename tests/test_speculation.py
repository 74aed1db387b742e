"""Speculation counts: the one derivation of acceptance rate and accept length, per run and summed."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from specsweep.record.speculation import SpeculationCounts, total


def test_ratios_are_derived_from_the_counts():
    counts = SpeculationCounts(drafted=400, accepted=300, emitted=500, verify_steps=100)
    assert counts.acceptance_rate == 0.75 and counts.accept_length == 4.0
    assert math.isnan(SpeculationCounts(drafted=0, accepted=0, emitted=1).acceptance_rate)
    assert math.isnan(SpeculationCounts(drafted=4, accepted=3, emitted=5).accept_length)  # no verify steps known


def test_the_json_ratios_are_written_but_never_read_back():
    counts = SpeculationCounts(drafted=40, accepted=30, emitted=64, verify_steps=10, source="/metrics")
    data = json.loads(json.dumps(counts.to_json()))
    assert data["acceptance_rate"] == 0.75
    assert SpeculationCounts.from_json({**data, "acceptance_rate": 0.1}) == counts  # an engine's ratio is ignored


def test_a_total_is_unknown_when_one_run_did_not_say_how_many_it_drafted():
    runs = [
        SpeculationCounts(drafted=40, accepted=30, emitted=64, verify_steps=10, source="response"),
        SpeculationCounts(drafted=None, accepted=20, emitted=64, verify_steps=10, source="/metrics"),
    ]
    summed = total(runs)
    assert summed.drafted is None and summed.accepted == 50 and summed.verify_steps == 20
    assert summed.accept_length == 1 + 50 / 20 and summed.source == "/metrics; response"
    assert total([]) is None


class _LlamaServer(BaseHTTPRequestHandler):
    """/props and /slots of a llama-server, speculative or not (``speculative``)."""

    speculative = True

    def do_GET(self):
        answer = (
            {"build_info": "b11434", "model_path": "/m", "total_slots": 1}
            if self.path == "/props"
            else [{"id": 0, "speculative": self.speculative}]
        )
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_speculative_llama_server_that_drafted_nothing_counts_zero_drafts_not_unknown():
    """llama-server's timings carry draft_n only when something was drafted: runs.csv had an empty `drafted`
    (read as unknown, and the summary then took the server log's counts) for runs that drafted nothing."""
    from specsweep.engines.base import EngineResources
    from specsweep.engines.llamacpp import LlamaCpp
    from specsweep.plan.config import Configuration

    server = ThreadingHTTPServer(("127.0.0.1", 0), _LlamaServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        for speculative, args in ((True, {"--spec-type": "ngram-simple"}), (False, {})):
            _LlamaServer.speculative = speculative
            engine = LlamaCpp({"kind": "llamacpp"}, EngineResources(model="/m"))
            configuration = Configuration(name="c", engine="e", kind="llamacpp", baseline=False, args=args, env={})
            engine.check_started(url, configuration)
            counts = engine.speculation({"timings": {"predicted_n": 64}}, {}, 64)
            if speculative:
                assert counts is not None and (counts.drafted, counts.accepted) == (0, 0)
                assert math.isnan(counts.acceptance_rate)  # no drafts: no rate
            else:
                assert counts is None  # no speculation: nothing to count
            drafted = engine.speculation({"timings": {"draft_n": 24, "draft_n_accepted": 4}}, {}, 64)
            assert (drafted.drafted, drafted.accepted) == (24, 4)
    finally:
        server.shutdown()
