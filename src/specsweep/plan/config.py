"""Load, validate and expand a specsweep configuration.

Validation happens in two layers, both before anything is launched:
the JSON schema (types, ranges, unknown keys, name patterns; via ``snakemake.utils.validate``,
which also fills in defaults) and the semantic checks here (grid and factor expansion clashes, one
baseline for each configuration, references between sections). Every error names the key and the fix.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from specsweep.plan import factors as sweep_factors
from specsweep.record import names
from specsweep.record.configuration import Configuration
from specsweep.record.errors import ConfigError
from specsweep.record.redact import is_secret

SCHEMA = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"


# An error message quotes at most this much of the offending value (never a whole expanded document).
MAX_QUOTED = 300


def validate_schema(raw: dict[str, Any]) -> dict[str, Any]:
    """Check ``raw`` against the JSON schema and return a copy with defaults filled in.

    jsonschema's best-matching error gives the message (with the key's path); Snakemake's
    ``validate`` then fills in the schema defaults exactly as in the workflow.
    """
    import jsonschema
    from snakemake.utils import validate

    from specsweep.plan.config_errors import unexpected_key_hint
    from specsweep.plan.schema_messages import alternatives_message

    schema = yaml.safe_load(SCHEMA.read_text())
    _refuse_non_finite(raw)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(raw))
    if error is not None:
        path = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        message = alternatives_message(error) or error.message  # anyOf/oneOf: what the alternatives are
        message = message if len(message) <= MAX_QUOTED else f"{message[:MAX_QUOTED]}... (cut)"
        key, hint = unexpected_key_hint(error)
        raise ConfigError(
            f"invalid configuration at '{path}': {message}{hint}. "
            "See config/README.md for the allowed keys and values.",
            key,
        )
    config = copy.deepcopy(raw)
    validate(config, str(SCHEMA), set_default=True)
    return config


def _refuse_non_finite(value: Any, path: tuple[str, ...] = ()) -> None:
    """JSON has no NaN or infinity, and JSON Schema lets them through every ``number``: ``request_rate:
    [.nan]`` planned a level that sends every request at once. Refused wherever they stand, naming the key."""
    if isinstance(value, float) and not math.isfinite(value):
        where = "/".join(path) or "(top level)"
        raise ConfigError(
            f"invalid configuration at '{where}': {value} is not a finite number; give a number such as 1 or 0.5. "
            "See config/README.md for the allowed keys and values.",
            path,
        )
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_non_finite(item, (*path, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _refuse_non_finite(item, (*path, str(index)))


def load(path: str | Path) -> dict[str, Any]:
    with open(path) as handle:
        raw = yaml.safe_load(handle)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the configuration must be a YAML mapping")
    return raw


def expand(config: dict[str, Any]) -> dict[str, Configuration]:
    """Expand grids and merge engine defaults into named, validated configurations."""
    names.check_config_names(config)
    check_engines(config)
    expanded: dict[str, Configuration] = {}
    origin: dict[str, str] = {}
    for entry_name in config["configurations"]:
        for name, configuration in expand_entry(config, entry_name).items():
            if name in expanded:
                raise ConfigError(
                    f"configurations/{entry_name}: expands to '{name}', which configurations/{origin[name]} "
                    f"already produces; rename one of them or set a distinct 'name' template"
                )
            expanded[name] = configuration
            origin[name] = entry_name

    if not any(c.baseline for c in expanded.values()):
        raise ConfigError(
            "configurations: no baseline; mark one configuration 'baseline: true' (or a factor level "
            "'baseline: true', which makes every configuration with that level a baseline)"
        )
    sweep_factors.baselines_by_configuration(expanded)  # every configuration has exactly one baseline, or an error
    return expanded


def check_engines(config: dict[str, Any]) -> None:
    """Every engine's model is defined (what a kind of engine needs: ``preflight``)."""
    engines = config["engines"]
    models = config.get("models", {})
    for engine_name, engine in engines.items():
        model = engine.get("model")
        if model is not None and model not in models:
            raise ConfigError(
                f"engines/{engine_name}/model: '{model}' is not defined under 'models' "
                f"(defined: {', '.join(sorted(models)) or 'none'})"
            )


def expand_entry(config: dict[str, Any], entry_name: str) -> dict[str, Configuration]:
    """The configurations one ``configurations`` entry produces (one, or one per grid point)."""
    engines = config["engines"]
    entry = config["configurations"][entry_name]
    engine_name = _engine_of(entry_name, entry, engines)
    engine = engines[engine_name]
    if entry.get("draft_model") and entry["draft_model"] not in config.get("models", {}):
        raise ConfigError(
            f"configurations/{entry_name}/draft_model: '{entry['draft_model']}' is not defined under 'models'"
        )
    expanded: dict[str, Configuration] = {}
    for point in _points(entry_name, entry, sweep_factors.parse_factors(config.get("factors", {}))):
        name = point.name
        names.check(name, f"configurations/{entry_name}")
        if name in expanded:
            raise ConfigError(f"configurations/{entry_name}: expands to '{name}' twice; set a distinct 'name' template")
        # a fixed list of GPUs (outside a scheduler); a count is chosen at launch (placement.select_gpus)
        fixed = isinstance(engine.get("gpus"), list)
        devices = {"CUDA_VISIBLE_DEVICES": ",".join(map(str, engine["gpus"]))} if fixed else {}
        # later wins: engine, entry, grid axis or factor levels; null (None) means not set
        args = {**engine.get("args", {}), **entry.get("args", {}), **point.args}
        args = sweep_factors.apply_json_keys(args, f"configurations/{entry_name}: configuration '{name}'")
        env = {**devices, **engine.get("env", {}), **entry.get("env", {}), **point.env}
        expanded[name] = Configuration(
            name=name,
            engine=engine_name,
            kind=engine["kind"],
            baseline=entry.get("baseline", False) or bool(point.baseline_factors),
            args=args,
            env={k: _env_string(v) for k, v in env.items() if v is not None},
            axes=point.axes,
            group=entry_name,
            draft_model=entry.get("draft_model"),
            description=entry.get("description", ""),
            unset_env=[k for k, v in env.items() if v is None],
            levels=point.levels,
            baseline_factors=list(point.baseline_factors),
            compared_with=entry.get("compared_with"),
        )
    return expanded


def _engine_of(entry_name: str, entry: dict[str, Any], engines: dict[str, Any]) -> str:
    if "engine" in entry:
        if entry["engine"] not in engines:
            raise ConfigError(
                f"configurations/{entry_name}/engine: '{entry['engine']}' is not defined under "
                f"'engines' (defined: {', '.join(sorted(engines))})"
            )
        return entry["engine"]
    if len(engines) > 1:
        raise ConfigError(f"configurations/{entry_name}: several engines are defined; say which with 'engine:'")
    return next(iter(engines))


@dataclass(frozen=True)
class _Point:
    """One configuration of an entry before merging: its name, grid axis values or factor levels."""

    name: str
    args: dict[str, Any]
    env: dict[str, Any]
    axes: dict[str, Any] = field(default_factory=dict)
    levels: dict[str, str] = field(default_factory=dict)
    baseline_factors: tuple[str, ...] = ()


def _points(entry_name: str, entry: dict[str, Any], factors: dict[str, list[sweep_factors.Level]]) -> list[_Point]:
    if entry.get("grid") and entry.get("factors"):
        raise ConfigError(
            f"configurations/{entry_name}: has both 'grid' and 'factors'; use factors only (a grid "
            f"axis is a factor whose levels each set one value)"
        )
    if entry.get("factors"):
        own = {**(entry.get("args") or {}), **{f"env:{k}": v for k, v in (entry.get("env") or {}).items()}}
        sweep_factors.check_entry(entry_name, entry["factors"], factors, own)
        return [
            _Point(name=p.name, args=p.args, env=p.env, levels=p.levels, baseline_factors=p.baseline_factors)
            for p in sweep_factors.cross(entry_name, entry["factors"], factors, entry.get("name"))
        ]
    if "name" in entry:
        raise ConfigError(
            f"configurations/{entry_name}/name: a name template needs 'factors' to fill it; remove it "
            f"(a grid's template is grid/name)"
        )
    return [
        _Point(
            name=name,
            axes=axes,
            args={a: v for a, v in axes.items() if not a.startswith("env:")},
            env={a[4:]: v for a, v in axes.items() if a.startswith("env:")},
        )
        for name, axes in _grid_points(entry_name, entry)
    ]


def _grid_points(entry_name: str, entry: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    grid = entry.get("grid")
    if not grid:
        return [(entry_name, {})]
    axes = {**grid.get("args", {}), **{f"env:{k}": v for k, v in grid.get("env", {}).items()}}
    if not axes:
        raise ConfigError(f"configurations/{entry_name}/grid: give at least one axis under 'args' or 'env'")
    template = grid.get("name")
    points = []
    for indices in itertools.product(*(range(len(v)) for v in axes.values())):
        point = {axis: axes[axis][i] for axis, i in zip(axes, indices, strict=True)}
        # Names become paths: a secret axis (e.g. env HF_TOKEN) is named by position, never by value.
        labels = {
            axis: f"{i + 1}" if is_secret(axis) else _label(point[axis]) for axis, i in zip(axes, indices, strict=True)
        }
        if template:
            name = template
            for axis, label in labels.items():
                name = name.replace("{" + axis.removeprefix("env:") + "}", label)
            if "{" in name or "}" in name:
                raise ConfigError(
                    f"configurations/{entry_name}/grid/name: '{template}' has a placeholder that "
                    f"is not an axis; use one of {', '.join('{' + a + '}' for a in axes)}"
                )
        else:
            name = "-".join(
                [entry_name, *(f"{_label(sweep_factors.axis_label(a))}-{label}" for a, label in labels.items())]
            )
        points.append((name, point))
    return points


def _label(value: Any) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def _env_string(value: Any) -> Any:
    if isinstance(value, dict):  # {from_env: NAME}, resolved inside the job (references.py)
        return value
    return str(value).lower() if isinstance(value, bool) else str(value)


def swept_parameters(configurations: dict[str, Configuration]) -> list[str]:
    """Flags and env vars (as "--flag" / "env:NAME") whose value differs between configurations."""
    keys: set[str] = set()
    for c in configurations.values():
        keys |= set(c.args) | {f"env:{k}" for k in c.env}
    return sorted(k for k in keys if len({json.dumps(parameter_value(c, k)) for c in configurations.values()}) > 1)


def parameter_value(configuration: Configuration, key: str) -> Any:
    if key.startswith("env:"):
        return configuration.env.get(key[4:])
    return configuration.args.get(key)
