"""Provenance records: the configuration and sweep records, the config hash, redaction."""

from __future__ import annotations

import json

import pytest

from specsweep.archive import provenance
from specsweep.record.results import Launch


def test_config_hash_ignores_key_order_and_secret_values():
    one = {"a": 1, "engines": {"e": {"env": {"HF_TOKEN": "abc123"}}}}
    two = {"engines": {"e": {"env": {"HF_TOKEN": "zzz999"}}}, "a": 1}
    assert provenance.config_sha256(one) == provenance.config_sha256(two)
    assert provenance.config_sha256(one) != provenance.config_sha256({**one, "a": 2})


@pytest.fixture
def launch() -> dict:
    return {
        "configuration": {"name": "ngram"},
        "argv": ["llama-server", "--api-key", "<redacted>"],
        "port": 8080,
        "host": "127.0.0.1",
        "env": {"PATH": "/bin", "SPECSWEEP_TEST_TOKEN": "planted-secret-value"},
        "env_set": {},
        "launched_at": "2026-01-01T00:00:00Z",
        "stopped_at": "2026-01-01T00:01:00Z",
        "status": "completed",
        "engine": {"version": "b11434-b11434"},
    }


def test_configuration_record_redacts_and_says_when_the_machine_was_seen(launch):
    later = {"host": {"hostname": "h"}}
    record = provenance.configuration_record(Launch.from_json(launch), {"kind": "llamacpp"}, {}, "f" * 64, later)
    assert record["format"] == provenance.FORMAT and record["scope"] == "configuration"
    assert "planted-secret-value" not in json.dumps(record)
    assert record["machine"] == later and record["machine_captured"].startswith("after")
    at_launch = provenance.configuration_record(
        Launch.from_json({**launch, "machine": {"host": {}}}), {}, {}, "f" * 64, later
    )
    assert at_launch["machine_captured"] == "at launch" and at_launch["machine"] == {"host": {}}


def test_sweep_record_spans_the_sessions(launch, monkeypatch):
    monkeypatch.setenv("SPECSWEEP_TEST_TOKEN", "planted-secret-value")
    one = provenance.configuration_record(Launch.from_json(launch), {}, {}, "f" * 64, {})
    two = provenance.configuration_record(
        Launch.from_json(
            {
                **launch,
                "configuration": {"name": "b"},
                "launched_at": "2026-01-01T00:02:00Z",
                "stopped_at": "2026-01-01T00:03:00Z",
            }
        ),
        {},
        {},
        "f" * 64,
        {},
    )
    files = {
        "ngram": {"file": "results/ngram/provenance.json", "sha256": "0" * 64},
        "b": {"file": "results/b/provenance.json", "sha256": "1" * 64},
    }
    sweep = provenance.sweep_record({"x": 1}, {"ngram": one, "b": two}, files, {"host": {}})
    assert sweep["started_at"] == "2026-01-01T00:00:00Z" and sweep["ended_at"] == "2026-01-01T00:03:00Z"
    assert sweep["configurations"]["ngram"]["engine_version"] == "b11434-b11434"
    assert sweep["config_sha256"] == provenance.config_sha256({"x": 1})
    assert "planted-secret-value" not in json.dumps(sweep)
