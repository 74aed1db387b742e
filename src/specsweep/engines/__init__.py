"""Engine adapters. Adding an engine = one module here + its part of the config schema."""

from __future__ import annotations

from typing import Any

from specsweep.engines.base import Engine, EngineResources
from specsweep.engines.llamacpp import LlamaCpp

ADAPTERS: dict[str, type[Engine]] = {LlamaCpp.kind: LlamaCpp}


def adapter(kind: str, settings: dict[str, Any], resources: EngineResources) -> Engine:
    try:
        engine_class = ADAPTERS[kind]
    except KeyError:
        raise ValueError(f"engine kind {kind!r} has no adapter yet; available: {', '.join(sorted(ADAPTERS))}") from None
    return engine_class(settings, resources)
