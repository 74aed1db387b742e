"""Engine adapters. A new engine kind is one module here (an ``Engine`` subclass with its ``kind``) and,
when its server log is to be read, one parser module in parsers/ (its ``LOG_FORMAT``); both are found
by looking, not by a list to extend.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from specsweep.engines.base import Engine, EngineResources


def _adapters() -> dict[str, type[Engine]]:
    """Every ``Engine`` subclass that names its ``kind``, from the modules of this package."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    found: dict[str, type[Engine]] = {}
    pending = list(Engine.__subclasses__())
    while pending:
        engine_class = pending.pop(0)
        pending.extend(engine_class.__subclasses__())
        if "kind" in vars(engine_class):
            found[engine_class.kind] = engine_class
    return dict(sorted(found.items()))


ADAPTERS: dict[str, type[Engine]] = _adapters()


def adapter_class(kind: str) -> type[Engine]:
    try:
        return ADAPTERS[kind]
    except KeyError:
        raise ValueError(f"engine kind {kind!r} has no adapter yet; available: {', '.join(ADAPTERS)}") from None


def adapter(kind: str, settings: dict[str, Any], resources: EngineResources) -> Engine:
    return adapter_class(kind).create(settings, resources)


def log_format_of(settings: dict[str, Any]) -> str:
    """The log format of an engine's server log (``settings``: its ``engines`` entry)."""
    return adapter_class(settings["kind"]).log_format_of(settings)


def provenance_packages() -> tuple[str, ...]:
    """Every adapter's packages, each once: what provenance records of the engines installed here."""
    return tuple(dict.fromkeys(p for engine_class in ADAPTERS.values() for p in engine_class.packages))
