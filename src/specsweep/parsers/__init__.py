"""Streaming parsers of engine logs into tidy rows, selected by log format.

A parser module declares ``LOG_FORMAT`` (``formats.LogFormat``); ``log_formats()`` collects them, so a new
log format is one module here.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

from specsweep.parsers.formats import NONE, LogFormat


@functools.cache
def log_formats() -> dict[str, LogFormat]:
    """Every log format by name: each parser module's ``LOG_FORMAT``, and ``none``."""
    found = {NONE.name: NONE}
    for module in pkgutil.iter_modules(__path__):
        declared = getattr(importlib.import_module(f"{__name__}.{module.name}"), "LOG_FORMAT", None)
        if declared is not None:
            found[declared.name] = declared
    return found
