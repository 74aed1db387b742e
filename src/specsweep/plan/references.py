"""Secret values given by reference: ``{from_env: NAME}`` as a flag or environment value of the config.

The config, Snakemake's params and metadata, and the job script it pickles hold only the name; the value is
read from the environment inside the measuring job (``resolve``), where it reaches the server and nothing
else: wherever the job writes argv or the environment, resolved values are redacted (``values_of``).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from specsweep.plan.config import ConfigError, Configuration

KEY = "from_env"


def name_of(value: Any) -> str | None:
    """The variable a ``{from_env: NAME}`` value refers to, or None for any other value."""
    if isinstance(value, dict) and set(value) == {KEY} and isinstance(value[KEY], str):
        return value[KEY]
    return None


def resolve(configuration: Configuration, environ: dict[str, str] | None = None) -> Configuration:
    """The configuration with each reference replaced by its variable's value; a variable that is not set is
    an error naming the key and the variable."""
    environ = os.environ if environ is None else environ

    def value(section: str, key: str, given: Any) -> Any:
        name = name_of(given)
        if name is None:
            return given
        if not environ.get(name):
            raise ConfigError(
                f"configurations/{configuration.group or configuration.name}/{section}/{key}: "
                f"from_env names {name}, which is not set (or empty) where the session runs; "
                f"export it before snakemake"
            )
        return environ[name]

    return dataclasses.replace(
        configuration,
        args={k: value("args", k, v) for k, v in configuration.args.items()},
        env={k: value("env", k, v) for k, v in configuration.env.items()},
    )


def values_of(configuration: Configuration, environ: dict[str, str] | None = None) -> list[str]:
    """The values the references of ``configuration`` (unresolved) stand for where they are set."""
    environ = os.environ if environ is None else environ
    names = [name_of(v) for v in [*configuration.args.values(), *configuration.env.values()]]
    return [environ[n] for n in names if n and environ.get(n)]


def shell_word(value: Any) -> str | None:
    """``"${NAME}"`` for a reference (commands.sh reads it from the caller's environment), else None."""
    name = name_of(value)
    return f'"${{{name}}}"' if name else None


def declared_names(config: dict[str, Any]) -> list[str]:
    """Every variable the config declares secret: each ``engines/<e>/api_key_env`` and each ``{from_env: NAME}``
    anywhere (configurations, grids, factor levels, engines)."""
    names = [e["api_key_env"] for e in (config.get("engines") or {}).values() if e.get("api_key_env")]

    def walk(node: Any) -> None:
        if (name := name_of(node)) is not None:
            names.append(name)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(config)
    return list(dict.fromkeys(names))


def declared_values(config: dict[str, Any], environ: dict[str, str] | None = None) -> list[str]:
    """The values of the variables ``declared_names`` where they are set: redacted wherever they occur, whatever
    their form (``redact.redact_values``), since the user said they are secret."""
    environ = os.environ if environ is None else environ
    return [environ[n] for n in declared_names(config) if environ.get(n)]
