"""The one check of every user-given name that becomes a path, a file name, a shell word or LaTeX.

Names are matched as whole strings (``fullmatch``): ``$`` in a pattern also matches before a final
newline, and a configuration named ``"x\\n"`` would end a comment line of ``commands.sh`` and start
a shell command. Names that would collide with the pipeline's own files and folders of ``results/``
are derived from the paths the workflow's rules write (``reserved_names``), never from a hand list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from specsweep.record.errors import ConfigError

# results/<name>/, results/engine/<name>.json, results/models/<name>.json, wildcard values.
PATH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
PATH_NAME_RULE = "1-64 characters from A-Z a-z 0-9 . _ - starting with a letter or digit"
# Profile parser names prefix summary.csv columns and LaTeX macros: no dots or dashes.
COLUMN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,39}")
COLUMN_NAME_RULE = "1-40 characters from A-Z a-z 0-9 _ starting with a letter"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # written unquoted into commands.sh as NAME=...
FLAG_NAME = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_.-]*")


def check(name: Any, key: str, pattern: re.Pattern[str] = PATH_NAME, rule: str = PATH_NAME_RULE) -> None:
    """Raise ConfigError unless ``name`` matches ``pattern`` as a whole string."""
    if not isinstance(name, str) or not pattern.fullmatch(name):
        raise ConfigError(
            f"{key}: name {name!r} is not allowed; names become paths, file names and shell words, so use {rule}"
        )


def check_config_names(config: dict[str, Any]) -> None:
    """Every name of a (schema-validated) config: engines, models, configurations, env and flag keys,
    profile parsers. Grid-expanded configuration names are checked where they are made (config.expand)."""
    for section in ("engines", "models", "configurations"):
        for name in config.get(section) or {}:
            check(name, f"{section}/{name!r}")
    for section in ("engines", "configurations"):
        for owner, entry in (config.get(section) or {}).items():
            for key in (entry.get("env") or {}, ((entry.get("grid") or {}).get("env") or {})):
                for env in key:
                    check(env, f"{section}/{owner}/env", ENV_NAME, "A-Z a-z 0-9 _ not starting with a digit")
            for key in (entry.get("args") or {}, ((entry.get("grid") or {}).get("args") or {})):
                for flag in key:
                    check(flag, f"{section}/{owner}/args", FLAG_NAME, "-x or --xyz with A-Z a-z 0-9 _ . -")
    for name in config.get("profile_parsers") or {}:
        check(name, f"profile_parsers/{name!r}", COLUMN_NAME, COLUMN_NAME_RULE)


def reserved_names(result_paths: Iterable[str]) -> frozenset[str]:
    """The first component under ``results/`` of each path the workflow writes, unless it is a wildcard
    (``results/{cfg}/...``): a configuration so named would collide with the pipeline's own output."""
    reserved = set()
    for path in result_paths:
        parts = str(path).split("/")
        if len(parts) > 1 and parts[0] == "results" and "{" not in parts[1]:
            reserved.add(parts[1])
    return frozenset(reserved)


def check_not_reserved(names: Iterable[str], reserved: frozenset[str]) -> None:
    taken = sorted(set(names) & reserved)
    if taken:
        raise ConfigError(
            "configurations: "
            + ", ".join(f"name '{name}' is taken by the pipeline's own results/{name}" for name in taken)
            + f"; rename the configuration (reserved: {', '.join(sorted(reserved))})"
        )
