"""Schema errors in words a user can act on, where jsonschema's own are generic.

``anyOf``/``oneOf`` failures read "... is not valid under any of the given schemas" (and quote the whole
value): this says instead what the alternatives are, e.g. ``needs concurrency or request_rate (or both)``
for ``benchmark.load``, ``needs either pypi_wheel and sha256, or path, or hub`` for a model, and for a flag's
value the kinds of value allowed; a single value where a list is wanted says how to write the list.
"""

from __future__ import annotations

from typing import Any


def alternatives_message(error: Any) -> str | None:
    """A message for an ``anyOf``/``oneOf`` error of ``error`` (a jsonschema ValidationError), or for a single
    value where a list is wanted (``concurrency: 2``: write ``[2]``), or None."""
    if error.validator == "type" and error.validator_value == "array" and not isinstance(error.instance, (list, dict)):
        return f"{_quoted(error.instance)} is not a list; write [{_quoted(error.instance)}] (a list of one)"
    if error.validator not in ("anyOf", "oneOf") or not isinstance(error.validator_value, list):
        return None
    alternatives = error.validator_value
    if all(isinstance(a, dict) and set(a) == {"required"} for a in alternatives):
        choices = [" and ".join(a["required"]) for a in alternatives]
        if error.validator == "anyOf":
            return f"needs {' or '.join(choices)}{' (or both)' if len(choices) == 2 else ''}"
        several = (
            isinstance(error.instance, dict)
            and sum(all(k in error.instance for k in a["required"]) for a in alternatives) > 1
        )
        either = f"either {', or '.join(choices)}"
        return f"give {either}, not more than one" if several else f"needs {either}"
    kinds = [_kind(a) for a in alternatives]
    if all(kinds):
        sweep = (
            "; to sweep several values, list them under the entry's grid (grid: {args: {flag: [...]}})"
            if isinstance(error.instance, list) and {"args", "env"} & set(map(str, error.absolute_path))
            else ""
        )
        return f"{_quoted(error.instance)} is not allowed here; give {', or '.join(kinds)}{sweep}"  # type: ignore[arg-type]
    return None


def _kind(schema: Any) -> str | None:
    """``a string, number, boolean or null`` for a ``type`` alternative, ``{from_env: NAME}`` for the reference."""
    if not isinstance(schema, dict):
        return None
    if "$ref" in schema and schema["$ref"].endswith("/from_env"):
        return "{from_env: NAME}"
    types = schema.get("type")
    if isinstance(types, str):
        types = [types]
    if isinstance(types, list) and set(schema) == {"type"}:
        return "a " + (", ".join(types[:-1]) + " or " + types[-1] if len(types) > 1 else types[0])
    return None


def _quoted(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
