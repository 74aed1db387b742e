"""Designed experiments: factors whose levels are named bundles of settings, crossed into configurations.

A factor (config ``factors:``) has named levels; each level sets several engine flags and/or
environment variables at once, and ``null`` means "not set": the flag is not passed, the variable
is removed from the engine's environment. A configurations entry lists the factors it crosses
(``factors: [depth, nccl]``); every combination of their levels is one configuration, named by the
entry's ``name`` template (``"eagle3-{depth}-{nccl}"``, placeholders are factor names and stand for
level names). A level marked ``baseline: true`` makes every configuration that has it a baseline.

Each non-baseline configuration is compared with the baseline that has the same level of every
factor the two share (apart from the factors that make that configuration a baseline), or with the
one it names (``compared_with``). Every problem is a ``ConfigError`` naming the configuration and key.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from specsweep.record.errors import ConfigError

PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class Level:
    """One named level of a factor: flags (None = not passed) and variables (None = unset)."""

    factor: str
    name: str
    args: Mapping[str, Any]
    env: Mapping[str, Any]
    baseline: bool = False

    def settings(self) -> dict[str, Any]:
        """Every key this level sets or unsets, as "--flag" / "env:NAME"."""
        return {**self.args, **{f"env:{k}": v for k, v in self.env.items()}}


@dataclass(frozen=True)
class Point:
    """One combination of levels: the configuration's name, its levels and what they set together."""

    name: str
    levels: dict[str, str]
    args: dict[str, Any]
    env: dict[str, Any]
    baseline_factors: tuple[str, ...]


def parse_factors(raw: Mapping[str, Mapping[str, Mapping[str, Any] | None]]) -> dict[str, list[Level]]:
    """``config["factors"]`` (schema-validated) as levels in the order written.

    A level is a mapping of flags (``--flag: value``), ``env: {NAME: value}`` and ``baseline: true``;
    an empty level (``off: {}`` or ``off:``) sets nothing.
    """
    factors: dict[str, list[Level]] = {}
    for factor, levels in raw.items():
        factors[factor] = []
        for level_name, level in levels.items():
            level = level or {}
            args = {k: v for k, v in level.items() if k.startswith("-")}
            factors[factor].append(
                Level(
                    factor=factor,
                    name=level_name,
                    args=args,
                    env=dict(level.get("env") or {}),
                    baseline=bool(level.get("baseline", False)),
                )
            )
    return factors


def cross(entry: str, names: Sequence[str], factors: Mapping[str, list[Level]], template: str | None) -> list[Point]:
    """Every combination of the levels of factors ``names`` for configurations entry ``entry``.

    Two factors may not set the same flag or variable (one of them would silently win); the
    name template may only use the factors crossed.
    """
    where = f"configurations/{entry}"
    for factor in names:
        if factor not in factors:
            raise ConfigError(
                f"{where}/factors: '{factor}' is not defined under 'factors' "
                f"(defined: {', '.join(sorted(factors)) or 'none'})"
            )
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}/factors: a factor is listed twice ({', '.join(names)})")
    if template is not None:
        unknown = [p for p in PLACEHOLDER.findall(template) if p not in names]
        if unknown:
            raise ConfigError(
                f"{where}/name: '{template}' has placeholder {{{unknown[0]}}}, which is not a factor "
                f"of this entry; use one of {', '.join('{' + n + '}' for n in names)}"
            )
    points = []
    for combination in itertools.product(*(factors[n] for n in names)):
        levels = {level.factor: level.name for level in combination}
        name = _name(entry, template, levels)
        owner: dict[str, str] = {}
        for level in combination:
            for key in level.settings():
                if key in owner:
                    raise ConfigError(
                        f"{where}: configuration '{name}': factors '{owner[key]}' and '{level.factor}' "
                        f"both set {key.removeprefix('env:')}; put it in one factor only"
                    )
                owner[key] = level.factor
        points.append(
            Point(
                name=name,
                levels=levels,
                args={k: v for level in combination for k, v in level.args.items()},
                env={k: v for level in combination for k, v in level.env.items()},
                baseline_factors=tuple(level.factor for level in combination if level.baseline),
            )
        )
    return points


def check_entry(
    entry: str, names: Sequence[str], factors: Mapping[str, list[Level]], settings: Mapping[str, Any]
) -> None:
    """Conflicts between an entry and the factors it crosses, each of which would silently do nothing:
    two levels of one factor marked baseline (every configuration would be a baseline, none compared), and
    a flag or variable of the entry's own ``args``/``env`` (``settings``, keys as in ``Level.settings``) that
    every level of a factor sets (the level always wins, so the entry's value is never used)."""
    where = f"configurations/{entry}"
    for factor in names:
        levels = factors.get(factor, [])
        marked = [level.name for level in levels if level.baseline]
        if len(marked) > 1:
            raise ConfigError(
                f"factors/{factor}: levels {', '.join(marked)} are all marked baseline: true, so every "
                f"configuration of {where} is a baseline and none is compared; mark one level (the one the "
                f"others are compared with)"
            )
        for key in settings:
            if levels and all(key in level.settings() for level in levels):
                section, shown = ("env", key.removeprefix("env:")) if key.startswith("env:") else ("args", key)
                raise ConfigError(
                    f"{where}/{section}/{shown}: every level of factor '{factor}' sets {shown}, so this value is "
                    f"never used; remove it here, or leave {shown} out of a level to give that level this value"
                )


def _name(entry: str, template: str | None, levels: dict[str, str]) -> str:
    if template is None:
        return "-".join([entry, *levels.values()])
    return PLACEHOLDER.sub(lambda match: levels[match.group(1)], template)


class Comparable(Protocol):
    """What baseline matching needs of a configuration (record.configuration.Configuration has it)."""

    name: str
    baseline: bool
    levels: dict[str, str]
    baseline_factors: Sequence[str]
    compared_with: str | None


def baseline_of(candidate: Comparable, configurations: Mapping[str, Comparable]) -> str | None:
    """The baseline ``candidate`` is compared with (None for a baseline itself).

    The one it names, else the only baseline, else the one baseline that has the candidate's level
    of every factor both have, the factors that make the baseline a baseline excepted.
    """
    if candidate.baseline:
        return None
    baselines = [c for c in configurations.values() if c.baseline]
    where = f"configuration '{candidate.name}'"
    entry = ("configurations", _entry(candidate))
    if candidate.compared_with is not None:
        if candidate.compared_with not in {b.name for b in baselines}:
            raise ConfigError(
                f"{where}: compared_with '{candidate.compared_with}' is not a baseline configuration "
                f"(baselines: {', '.join(b.name for b in baselines) or 'none'})",
                key=(*entry, "compared_with"),
            )
        return candidate.compared_with
    if len(baselines) == 1:
        return baselines[0].name
    matching = [
        b.name
        for b in baselines
        if all(
            b.levels[factor] == level
            for factor, level in candidate.levels.items()
            if factor in b.levels and factor not in b.baseline_factors
        )
    ]
    if len(matching) == 1:
        return matching[0]
    levels = ", ".join(f"{f}={v}" for f, v in candidate.levels.items()) or "no factor levels"
    found = f"several do ({', '.join(matching)})" if matching else "none does"
    # Named at the last of the competing baselines' 'baseline: true' (the others as alternatives), else the entry.
    marked = [("configurations", _entry(configurations[b]), "baseline") for b in reversed(matching)]
    raise ConfigError(
        f"{where} ({levels}): it needs exactly one baseline sharing its other factor levels, but "
        f"{found}; add that baseline, or name one with 'compared_with:' in its configurations entry",
        key=marked[0] if marked else entry,
        alternatives=(*marked[1:], entry),
    )


def _entry(configuration: Comparable) -> str:
    """The configurations entry a configuration was expanded from (record.configuration.Configuration.group)."""
    return getattr(configuration, "group", "") or configuration.name


def baselines_by_configuration(configurations: Mapping[str, Comparable]) -> dict[str, str | None]:
    """``baseline_of`` for every configuration (raises on the first that has none or several)."""
    return {name: baseline_of(c, configurations) for name, c in configurations.items()}


# Short names of well-known keys inside a JSON flag (vLLM --speculative-config, vllm/config/speculative.py),
# for expanded configuration names: ngram-k-3 rather than ngram-speculative-config.num_speculative_tokens-3.
JSON_KEY_SHORT = {"num_speculative_tokens": "k", "prompt_lookup_max": "lookup-max", "prompt_lookup_min": "lookup-min"}


def json_key(flag: str) -> tuple[str, list[str]] | None:
    """``--speculative-config.num_speculative_tokens`` -> (``--speculative-config``, [``num_speculative_tokens``]):
    a key inside the JSON object a flag takes (dots for nested keys); None for a plain flag."""
    if not flag.startswith("-") or "." not in flag:
        return None
    base, *path = flag.split(".")
    return base, path


def axis_label(axis: str) -> str:
    """The part of an expanded name that says which axis a value is of."""
    inside = json_key(axis)
    if inside is None:
        return axis.removeprefix("env:").lstrip("-")
    return JSON_KEY_SHORT.get(inside[1][-1], inside[1][-1])


def apply_json_keys(args: dict[str, Any], where: str) -> dict[str, Any]:
    """Merged args with each ``--flag.key: value`` written into the JSON object of ``--flag`` (null removes
    the key), so one key can be a grid axis or a factor level while the rest of the object stays fixed.
    Where ``--flag`` itself is null or false (a level that drops it), its keys go with it."""
    keys = {flag: inside for flag in args if (inside := json_key(flag)) is not None}
    if not keys:
        return args
    merged = {flag: value for flag, value in args.items() if flag not in keys}
    objects: dict[str, dict[str, Any]] = {}
    for flag, (base, path) in keys.items():
        if base in merged and merged[base] in (None, False):
            continue  # the flag itself is dropped (a level's null): no object to set a key in
        if base not in objects:
            objects[base] = _json_object(merged.get(base), base, flag, where)
        target = objects[base]
        for part in path[:-1]:
            inner = target.setdefault(part, {})
            if not isinstance(inner, dict):
                raise ConfigError(f"{where}: {flag}: '{part}' inside {base} is {inner!r}, not a JSON object")
            target = inner
        if isinstance(args[flag], dict) and set(args[flag]) == {"from_env"}:
            # a reference inside a JSON string would reach the engine as the text {"from_env": ...}, and no
            # redaction knows where in the string the value went
            raise ConfigError(
                f"{where}: {flag}: a {{from_env: {args[flag]['from_env']}}} cannot stand for one key inside the JSON "
                f"object of {base}; give the whole {base} as {{from_env: NAME}} (the JSON object in that variable)"
            )
        if args[flag] is None:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = args[flag]
    for base, value in objects.items():
        merged[base] = json.dumps(value)
    return merged


def _json_object(raw: Any, base: str, flag: str, where: str) -> dict[str, Any]:
    if raw is None:
        raise ConfigError(
            f"{where}: {flag} sets a key inside {base}, which this configuration does not set; give {base} the "
            f'rest of the JSON object, e.g. {base}: \'{{"method": "ngram", "prompt_lookup_max": 4}}\''
        )
    try:
        value = json.loads(str(raw))
    except json.JSONDecodeError as error:
        raise ConfigError(f"{where}/args/{base}: not valid JSON ({error}), so {flag} cannot set a key in it") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{where}/args/{base}: {flag} sets a key, but {base} is not a JSON object: {raw!r}")
    return value
