"""Provenance records: how a number was made (code, machine, GPUs, software, config), assembled.

One format (``FORMAT``, documented in docs/provenance.md) at two scopes: ``results/<cfg>/provenance.json``
for one configuration's session and ``results/provenance.json`` for the sweep. The machine snapshot
(``machine.snapshot``) is taken by the session just before the server starts (kept in launch.json), so it
describes the machine as it was measured.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from specsweep.measure import machine
from specsweep.measure.placement import of_launch
from specsweep.plan import references
from specsweep.plan.environment import engine_environment
from specsweep.record.cache import sha256_bytes
from specsweep.record.redact import REDACTED, redact_env, redact_mapping, redact_values
from specsweep.record.results import Launch, configuration_of_file

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
        "env_unset": launch.env_unset,
        # config, pass-through or default (environment.py); None in launches before the clean environment
        "env_origin": launch.env_origin,
        "started_at": launch.launched_at,
        "ended_at": launch.stopped_at,
        "status": launch.status,
        "placement": of_launch(launch) if launch.machine else None,  # node, GPU models, driver, Slurm job
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
        **gpu_settings_at_start(configurations),
        "env": engines_share(config, os.environ),
    }


def engines_share(config: dict[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """What every engine gets of the calling environment (the default variables and ``environment.pass_through``;
    not the rest, which may hold anything), secrets redacted by name and declared ones by value."""
    pass_through = (config.get("environment") or {}).get("pass_through", [])
    shared = redact_env(engine_environment(environ, {}, (), pass_through).values)
    declared = set(references.declared_values(config, dict(environ)))
    return {k: REDACTED if v in declared else redact_values(v, [], declared) for k, v in shared.items()}


def gpu_settings_at_start(configurations: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The GPUs' power limits, application clocks and persistence mode as the sweep's first configuration was
    launched, and a warning per configuration launched under another power limit or application clocks."""
    launched = sorted((c for c in configurations.values() if c.get("machine")), key=lambda c: c["started_at"] or "")
    if not launched:
        return {"gpu_settings_at_start": [], "gpu_settings_warnings": []}
    first = machine.settings_of(launched[0]["machine"])
    warnings = []
    for record in launched[1:]:
        mine = machine.settings_of(record["machine"])
        for key in ("power_limit", "applications_clocks", "persistence_mode"):
            if [s.get(key) for s in mine] != [s.get(key) for s in first]:
                warnings.append(
                    f"{record['name']}: GPU {key.replace('_', ' ')} {[s.get(key) for s in mine]} differs from "
                    f"{launched[0]['name']}'s {[s.get(key) for s in first]}: their energy and speed are not comparable"
                )
    return {"gpu_settings_at_start": first, "gpu_settings_warnings": warnings}


def write(
    config: dict[str, Any],
    outputs: dict[str, str],
    launches: dict[str, Launch],
    records: dict[str, dict[str, Any]],
    sources: dict[str, dict[str, Any]],
    sweep_output: str,
    progress: TextIO,
) -> None:
    """The provenance job: each configuration's record (``outputs``: launch.json -> its provenance.json),
    then the sweep's, which cites each by sha256. ``records`` are the engine and model records by path,
    ``sources`` which of them each configuration used."""
    from specsweep.engines import provenance_packages
    from specsweep.record.atomic import write_json
    from specsweep.record.cache import sha256_file

    current = machine.snapshot(engine_packages=provenance_packages())  # the machine now
    config_hash = config_sha256(config)
    written, files = {}, {}
    for launch_path, output in outputs.items():
        launch, name = launches[launch_path], configuration_of_file(launch_path)
        used = sources[name]
        # Sessions record the machine at launch; a launch.json from before that gets today's snapshot, marked so.
        written[name] = configuration_record(
            launch,
            records[used["engine"]],
            {Path(m).stem: records[m] for m in used["models"]},
            config_hash,
            None if launch.machine else current,
        )
        write_json(Path(output), written[name])
        files[name] = {"file": str(output), "sha256": sha256_file(Path(output))}
        print(f"{name}: provenance (machine {written[name]['machine_captured']})", file=progress)
    sweep = sweep_record(config, written, files, current)
    write_json(Path(sweep_output), sweep)
    for warning in sweep["gpu_settings_warnings"]:
        print(f"WARNING: {warning}", file=progress)
    print(f"sweep provenance of {len(written)} configurations written", file=progress)
