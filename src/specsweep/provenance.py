"""Provenance records: how a number was made (code, machine, GPUs, software, config), assembled.

One format (``FORMAT``, documented in docs/provenance.md) at two scopes: ``results/<cfg>/provenance.json``
for one configuration's session and ``results/provenance.json`` for the sweep. The machine snapshot
(``machine.snapshot``) is taken by the session just before the server starts (kept in launch.json), so it
describes the machine as it was measured.
"""

from __future__ import annotations

import json
import os
from typing import Any

from specsweep.cache import sha256_bytes
from specsweep.redact import redact_env, redact_mapping
from specsweep.results import Launch

FORMAT = "specsweep-provenance/1"


def config_sha256(config: dict[str, Any]) -> str:
    """Hash of the validated config (defaults filled, secrets redacted), key order irrelevant."""
    canonical = json.dumps(redact_mapping(config), sort_keys=True, separators=(",", ":"), default=str)
    return sha256_bytes(canonical)


def configuration_record(
    launch: Launch,
    engine: dict[str, Any],
    models: dict[str, Any],
    config_hash: str,
    captured_later: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One configuration's provenance from its launch record (which holds the machine at launch)."""
    return {
        "format": FORMAT,
        "scope": "configuration",
        "name": launch.configuration.get("name"),
        "config_sha256": config_hash,
        "configuration": launch.configuration,
        "engine": {"record": engine, "reported": launch.engine},
        "models": models,
        "argv": launch.argv,
        "env": redact_env(launch.env),
        "env_set": redact_env(launch.env_set),
        "started_at": launch.launched_at,
        "ended_at": launch.stopped_at,
        "status": launch.status,
        "machine": launch.machine or captured_later,
        "machine_captured": "at launch" if launch.machine else "after the session (launch.json has no snapshot)",
    }


def sweep_record(
    config: dict[str, Any],
    configurations: dict[str, dict[str, Any]],
    files: dict[str, dict[str, str]],
    current: dict[str, Any],
) -> dict[str, Any]:
    """The sweep's provenance: config, each configuration in brief (its file and sha256), the machine now."""
    starts = [c["started_at"] for c in configurations.values() if c.get("started_at")]
    ends = [c["ended_at"] for c in configurations.values() if c.get("ended_at")]
    return {
        "format": FORMAT,
        "scope": "sweep",
        "config_sha256": config_sha256(config),
        "config": redact_mapping(config),
        "started_at": min(starts, default=None),
        "ended_at": max(ends, default=None),
        "configurations": {
            name: {
                **files[name],
                "started_at": record.get("started_at"),
                "ended_at": record.get("ended_at"),
                "status": record.get("status"),
                "argv": record.get("argv"),
                "engine_version": (record.get("engine", {}).get("reported") or {}).get("version"),
            }
            for name, record in configurations.items()
        },
        "machine": current,
        "env": redact_env(dict(os.environ)),
    }
