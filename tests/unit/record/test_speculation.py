"""Speculation counts: the one derivation of acceptance rate and accept length, per run and summed."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from run_records import runs_of

from specsweep.analyse import aggregate, runs_table
from specsweep.record.speculation import SpeculationCounts, total, usable_speculation


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


@pytest.mark.parametrize(
    ("counts", "why"),
    [
        (SpeculationCounts(drafted=-222, accepted=-111, emitted=16), "drafted -222, accepted -111 below zero"),
        (SpeculationCounts(drafted=10, accepted=50, emitted=64), "accepted 50 > drafted 10"),
        (SpeculationCounts(drafted=None, accepted=70, emitted=64), "accepted 70 > tokens emitted 64"),
        (SpeculationCounts(drafted=90, accepted=20, emitted=64, verify_steps=65), "verify steps 65 > tokens emitted"),
        (SpeculationCounts(drafted=0, accepted=0, emitted=64), None),  # a speculative server that drafted nothing
        (SpeculationCounts(drafted=30, accepted=20, emitted=0, verify_steps=10), None),  # a window's: emitted unknown
    ],
)
def test_impossible_counts_say_why(counts, why):
    assert (counts.impossible is None) if why is None else why in counts.impossible
    assert usable_speculation(counts)[0] is (counts if why is None else None)


def test_a_record_with_impossible_counts_is_refused_as_it_is_read_and_named_in_the_summary():
    """A run file written before the refusal (acceptance 5.0 in it) enters no total and is named."""
    claimed = SpeculationCounts(drafted=10, accepted=50, emitted=500, source="response").to_json()
    fine = SpeculationCounts(drafted=40, accepted=30, emitted=500, source="response").to_json()
    runs = runs_of({"spec": [{"client": {"decode_tokens_per_s": 10.0}, "speculation": s} for s in (claimed, fine)]})
    assert runs["spec"][0].speculation is None and "accepted 50 > drafted 10" in runs["spec"][0].speculation_refused
    table = runs_table.runs_table(runs)
    assert table["speculation_source"].tolist() == [f"refused: {runs['spec'][0].speculation_refused}", "response"]
    assert table["drafted"].tolist()[1] == 40 and math.isnan(table["drafted"].tolist()[0])
    (warning,) = aggregate.refused_speculation(["spec"], runs)
    assert warning.startswith("spec run 0: impossible speculation counts from response: accepted 50 > drafted 10")
