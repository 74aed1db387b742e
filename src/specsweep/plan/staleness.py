"""Whether the measurements on disk were made under the parameters the config asks for now.

A configuration that was not measured again after its parameters changed (a sweep that failed
before reaching it) still has its old runs on disk. The provisional summary labels such a row with
the parameters it was measured under (from its ``launch.json``) and calls it ``stale``, not ``ok``.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from specsweep.plan.rate_search import PER_REQUEST
from specsweep.record.configuration import NOT_IDENTITY, Configuration
from specsweep.record.redact import redact_mapping
from specsweep.record.results import Launch

# Benchmark settings a measurement does not depend on: when to give up (timeouts), checks around it that
# change no number (the GPU memory check and its tolerance), what the tables make of it (the SLOs), and which
# levels and how many windows are listed (a level or window added is a missing output, measured then; one
# removed leaves the others valid). Editing one reruns no bench job (its params) and stales no run; the
# rate search's percentile SLOs are the exception (its probes depend on them).
NOT_MEASUREMENT = frozenset(
    {
        "ready_timeout_s",
        "request_timeout_s",
        "stop_grace_s",
        "gpu_memory_check",
        "gpu_release_timeout_s",
        "gpu_release_tolerance_mib",
    }
)
NOT_LOAD_MEASUREMENT = frozenset({"slo", "concurrency", "request_rate", "windows"})


def measurement_identity(benchmark: dict[str, Any]) -> dict[str, Any]:
    """The benchmark settings that identify a measurement: the bench rule's params, and what a launch record
    is compared on."""
    identity = {k: v for k, v in benchmark.items() if k not in NOT_MEASUREMENT}
    if isinstance(load := identity.get("load"), dict):
        identity["load"] = {k: v for k, v in load.items() if k not in NOT_LOAD_MEASUREMENT}
        if load.get("rate_search"):  # the search's probes follow its objectives: they are what it measured
            identity["load"]["slo"] = {k: v for k, v in (load.get("slo") or {}).items() if k not in PER_REQUEST}
    return identity


def _comparable(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in redact_mapping(params).items() if k not in NOT_IDENTITY}


def stale_reason(launch: Launch, configuration: Configuration, benchmark: dict[str, Any]) -> str | None:
    """What differs between the launch record and the config now (None when nothing that identifies a job does)."""
    now, then = _comparable(configuration.as_params()), _comparable(launch.configuration)
    changed = sorted(k for k in now.keys() | then.keys() if now.get(k) != then.get(k))
    # benchmark settings the launch recorded (older launch records have none: not evidence of a change)
    measured, current = measurement_identity(launch.benchmark or {}), measurement_identity(redact_mapping(benchmark))
    changed += sorted(f"benchmark/{k}" for k in measured.keys() & current.keys() if measured[k] != current[k])
    return f"measured under other {', '.join(changed)}" if changed else None


def measured_under(launch: Launch) -> Configuration:
    """The configuration as its launch record says it was measured (secrets redacted)."""
    known = {f.name for f in fields(Configuration)}
    return Configuration(**{k: v for k, v in launch.configuration.items() if k in known})
