"""Schema errors in words a user can act on, where jsonschema's own are generic.

``anyOf``/``oneOf`` failures read "... is not valid under any of the given schemas" (and quote the whole
value): this says instead what the alternatives are, e.g. ``needs concurrency, request_rate, rate_search or
ramp_up (one or more)`` for ``benchmark.load``, ``needs either pypi_wheel and sha256, or path, or hub`` for a
model, and for a flag's value the kinds of value allowed; a single value where a list is wanted says how to
write the list; a key that fits none of an object's key patterns, what the keys may be, in words.
"""

from __future__ import annotations

import re
from typing import Any

# What a pattern of the schema asks for, in words ("does not match '^[0-9a-f]{64}$'" told no one the fix).
PATTERNS = {
    "^[0-9a-f]{64}$": "a sha256: 64 lowercase hexadecimal digits (sha256sum FILE prints it)",
    "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$": "a name: letters, digits, '.', '_' and '-', starting with a letter or "
    "digit, at most 64 characters",
    "^[A-Za-z]+$": "letters only (it starts LaTeX macro names)",
    "^[A-Za-z_][A-Za-z0-9_]*$": "an environment variable's name: letters, digits and '_', not starting with a digit",
    "^[A-Za-z][A-Za-z0-9_]{0,39}$": "an identifier: letters, digits and '_', starting with a letter, at most 40",
    "^--?[A-Za-z0-9][A-Za-z0-9_.-]*$": "a command-line flag: '-x' or '--long-name'",
    "^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$": "a Hugging Face id: owner/name",
    "^https?://[^/\\s]+(/.*)?$": "an http:// or https:// URL",
    "^(ttft|tpot|e2e)_p(\\d+(\\.\\d+)?)_ms$": "a percentile objective: ttft, tpot or e2e, _p, the percentile, _ms "
    "(ttft_p99_ms)",
}
# jsonschema's type names in a user's words, with an example of each as YAML writes it
TYPES = {
    "integer": "a whole number (e.g. 7)",
    "number": "a number (e.g. 0.5)",
    "boolean": "true or false",
    "string": "text (quote it if it looks like a number)",
    "object": "a mapping of keys to values (key: value lines)",
}


def alternatives_message(error: Any) -> str | None:
    """A message for an ``anyOf``/``oneOf`` error of ``error`` (a jsonschema ValidationError), for a single
    value where a list is wanted (``concurrency: 2``: write ``[2]``), for a pattern or a type in words, or None."""
    if error.validator == "type" and error.validator_value == "array" and not isinstance(error.instance, (list, dict)):
        return f"{_quoted(error.instance)} is not a list; write [{_quoted(error.instance)}] (a list of one)"
    if error.validator == "pattern" and error.validator_value in PATTERNS:
        return f"{_quoted(error.instance)} is not {PATTERNS[error.validator_value]}"
    if error.validator == "additionalProperties" and (words := _key_patterns(error.schema)):
        unknown = [k for k in error.instance if k not in error.schema.get("properties", {}) and not _matches(k, error)]
        named = ", ".join(error.schema.get("properties", {}))
        return f"{', '.join(map(_quoted, unknown))} is not a key here: {named}, or {' or '.join(words)}"
    if error.validator == "type" and error.validator_value in TYPES:
        return f"{_quoted(error.instance)} is not {TYPES[error.validator_value]}"
    if error.validator not in ("anyOf", "oneOf") or not isinstance(error.validator_value, list):
        return None
    alternatives = error.validator_value
    if all(isinstance(a, dict) and set(a) == {"required"} for a in alternatives):
        choices = [" and ".join(a["required"]) for a in alternatives]
        if error.validator == "anyOf":
            listed = f"{', '.join(choices[:-1])} or {choices[-1]}" if len(choices) > 1 else choices[0]
            several = {1: "", 2: " (or both)"}.get(len(choices), " (one or more)")
            return f"needs {listed}{several}"
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


def _key_patterns(schema: Any) -> list[str]:
    """The keys an object's ``patternProperties`` allow, in words (empty unless every pattern has them)."""
    patterns = schema.get("patternProperties") if isinstance(schema, dict) else None
    words = [PATTERNS.get(p) for p in patterns or {}]
    return [w for w in words if w] if words and all(words) else []


def _matches(key: str, error: Any) -> bool:
    return any(re.search(pattern, key) for pattern in error.schema.get("patternProperties", {}))


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
