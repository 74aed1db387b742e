"""What a real SGLang 0.5.16 server wrote on one H200 (2026-12-02), read from the committed archive of
docs/examples/h200-sglang: its log, its /server_info as the launch record kept it, and a run's /metrics
deltas. The fixtures of tests/unit/parsers/test_sglang.py and tests/unit/engines/test_sglang.py were written from
SGLang's source; these are what the released server really printed and answered."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from specsweep.engines.base import EngineResources
from specsweep.engines.sglang import SGLang
from specsweep.parsers import sglang

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "h200-sglang"
ARCHIVE = next(EXAMPLE.glob("specsweep-*.tar.gz"))
CONFIGURATION = "standalone-s2"  # --speculative-algorithm STANDALONE, 2 steps, topk 1, 3 draft tokens


def member(name: str) -> bytes:
    with tarfile.open(ARCHIVE) as archive:
        extracted = archive.extractfile(f"{ARCHIVE.name.removesuffix('.tar.gz')}/results/{name}")
        assert extracted is not None, name
        return extracted.read()


def record(name: str) -> dict[str, Any]:
    return json.loads(member(name))


def test_the_real_log_decode_batch_lines_all_parse():
    lines = member(f"{CONFIGURATION}/server.log").decode().splitlines()
    parsed = sglang.parse(lines)
    assert parsed.malformed == 0 and len(parsed.rows) == sum("Decode batch" in line for line in lines) == 14
    # at most num_draft_tokens (3) per verify step; the model drafts for itself, so nearly all are accepted
    assert all(2.5 <= row["accept_len"] <= 3.0 and 0.75 <= row["accept_rate"] <= 1.0 for row in parsed.rows)
    assert all(row["graph"] == "True" and row["running_req"] == 1 for row in parsed.rows)


def test_the_cache_was_flushed_before_every_run():
    log = member(f"{CONFIGURATION}/server.log").decode()
    assert log.count('"POST /flush_cache HTTP/1.1" 200') == log.count("Cache flushed successfully!") == 7


def test_server_info_holds_what_was_asked():
    launch = record(f"{CONFIGURATION}/launch.json")
    assert launch["engine"]["version"] == "0.5.16"
    assert launch["engine"]["speculative_algorithm"] == "STANDALONE"
    asked = dict(zip(launch["argv"], launch["argv"][1:], strict=False))
    assert int(asked["--speculative-num-steps"]) == launch["engine"]["speculative_num_steps"] == 2
    assert int(asked["--speculative-num-draft-tokens"]) == launch["engine"]["speculative_num_draft_tokens"] == 3
    # the scheduler children exited with the server: the GPU memory came back before the next launch
    assert launch["gpu_memory"]["mib_used"]["after_teardown"] == {"0": 0}


@pytest.mark.parametrize("run", range(7))
def test_counter_deltas_give_the_recorded_speculation(run):
    """0.5.16's chat route carries no meta_info: the counts come from /metrics (spec_verify_calls_total,
    generation_tokens_total), with drafted = verify steps x (num_draft_tokens - 1) from /server_info."""
    launch = record(f"{CONFIGURATION}/launch.json")
    measured = record(f"{CONFIGURATION}/runs/run_{run}.json")
    engine = SGLang({"kind": "sglang"}, EngineResources(model="/m"))
    engine.server_args = launch["engine"]
    counts = engine.speculation({}, measured["counter_delta"], emitted=measured["tokens"])
    assert counts is not None
    assert counts.to_json() == measured["speculation"]
    assert 2.5 <= counts.accept_length <= 3.0  # as the log's own Decode batch lines say


def test_no_speculation_counts_for_the_baseline():
    measured = record("baseline/runs/run_0.json")
    engine = SGLang({"kind": "sglang"}, EngineResources(model="/m"))
    engine.server_args = record("baseline/launch.json")["engine"]
    assert "sglang:spec_verify_calls_total" not in measured["counter_delta"]
    assert engine.speculation({}, measured["counter_delta"], emitted=measured["tokens"]) is None
