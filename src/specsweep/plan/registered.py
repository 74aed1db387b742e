"""The configuration values that name something registered: engine kinds (``specsweep.engines.ADAPTERS``)
and log formats (``specsweep.parsers.log_formats``). The schema only says they are strings, so a new
engine module or parser is accepted without a schema edit; this checks them against the registry before
anything starts, with the key, the registered values and the closest one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from specsweep.engines import ADAPTERS
from specsweep.parsers import log_formats
from specsweep.plan.config_errors import closest
from specsweep.record.errors import ConfigError


def check_registered(config: dict[str, Any]) -> None:
    """Raise ``ConfigError`` for the first value that names no registered engine kind or log format."""
    kinds = list(ADAPTERS)
    # an endpoint may be any engine specsweep can otherwise launch: it is then spoken to natively
    launched = [kind for kind, engine_class in ADAPTERS.items() if engine_class.launches]
    for key, value, registered, what in _named_values(config, kinds, launched, list(log_formats())):
        if value not in registered:
            raise ConfigError(_message(key, value, registered, what), key)


def _named_values(
    config: dict[str, Any], kinds: list[str], launched: list[str], formats: list[str]
) -> Iterator[tuple[tuple[str, ...], Any, list[str], str]]:
    """Each value to check: its key path, the value, what it may be and what that is called."""
    for name, engine in config.get("engines", {}).items():
        yield ("engines", name, "kind"), engine.get("kind"), kinds, "registered engine kind"
        external = engine.get("external", {})
        if "engine" in external:
            yield (
                ("engines", name, "external", "engine"),
                external["engine"],
                launched,
                "registered engine kind that specsweep can launch",
            )
        if "log_format" in external:
            yield ("engines", name, "external", "log_format"), external["log_format"], formats, "registered log format"
    for name, parser in (config.get("profile_parsers") or {}).items():
        for index, kind in enumerate(parser.get("engines", [])):
            yield ("profile_parsers", name, "engines", str(index)), kind, kinds, "registered engine kind"


def _message(key: tuple[str, ...], value: Any, registered: list[str], what: str) -> str:
    close = closest(str(value), registered)
    fix = f"did you mean '{close}'?" if close else "use one of them, or add its module (see config/README.md)"
    return f"{'/'.join(key)}: {value!r} is not a {what} ({', '.join(registered)}); {fix}"
