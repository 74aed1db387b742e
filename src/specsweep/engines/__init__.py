"""Engine adapters. Adding an engine = one module here + its part of the config schema."""

from __future__ import annotations

from typing import Any

from specsweep.engines.base import Engine, EngineResources
from specsweep.engines.external import External
from specsweep.engines.llamacpp import LlamaCpp
from specsweep.engines.sglang import SGLang
from specsweep.engines.vllm import VLLM

ADAPTERS: dict[str, type[Engine]] = {e.kind: e for e in (LlamaCpp, SGLang, VLLM, External)}


def adapter(kind: str, settings: dict[str, Any], resources: EngineResources) -> Engine:
    try:
        engine_class = ADAPTERS[kind]
    except KeyError:
        raise ValueError(f"engine kind {kind!r} has no adapter yet; available: {', '.join(sorted(ADAPTERS))}") from None
    return engine_class(settings, resources)
