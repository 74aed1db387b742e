"""Redaction of secrets in anything specsweep writes to disk."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
REDACTED = "<redacted>"


def is_secret(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


# A flag is secret when one of its dash/underscore-separated words is a secret word: --hf-token,
# --api-key; not counts such as --speculative-num-draft-tokens or --max-num-batched-tokens.
SECRET_WORDS = frozenset({"token", "key", "apikey", "secret", "password", "passwd", "credential", "credentials"})


def is_secret_flag(flag: str) -> bool:
    name = flag.lstrip("-").partition("=")[0]
    return any(word in SECRET_WORDS for word in re.split(r"[-_.]", name.lower()))


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return {k: (REDACTED if is_secret(k) else v) for k, v in sorted(env.items())}


def redact_argv(argv: list[str]) -> list[str]:
    """Hide the value after any flag whose name looks secret (``--api-key X``, ``--hf-token=X``)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
        elif arg.startswith("-") and is_secret_flag(arg):
            name, eq, _ = arg.partition("=")
            out.append(f"{name}={REDACTED}" if eq else arg)
            hide_next = not eq
        else:
            out.append(arg)
    return out


def redact_values(text: str, secrets: list[str]) -> str:
    """Replace literal secret values (e.g. echoed by a server into its log)."""
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def secret_values(env: dict[str, str]) -> list[str]:
    return [v for k, v in env.items() if is_secret(k) and v]


def secret_arg_values(argv: list[str]) -> list[str]:
    """The values ``redact_argv`` hides (``--api-key X``): an engine may echo its arguments into its log."""
    hidden = []
    for arg, shown in zip(argv, redact_argv(argv), strict=True):
        if shown != arg:  # either the whole element (after --api-key) or the part after --api-key=
            hidden.append(arg.partition("=")[2] if shown.endswith(f"={REDACTED}") else arg)
    return [value for value in hidden if value]


def fingerprint(value: Any) -> str:
    """A stand-in for a secret that still changes when the secret does (Snakemake params, metadata)."""
    return "sha256:" + hashlib.sha256(str(value).encode()).hexdigest()[:16]


def redact_mapping(data: Any, in_env: bool = False, replace: Callable[[Any], str] | None = None) -> Any:
    """Redact recursively (e.g. a config): in an ``env`` mapping every variable named like a secret
    (as ``redact_env``, with its grid values), elsewhere a key with a secret word (``--api-key``,
    ``hf_token``) but not counts like ``max_tokens``, which must stay valid config.
    ``replace`` maps a secret value to its stand-in (default ``<redacted>``; ``fingerprint`` for params)."""
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            secret = isinstance(key, str) and (is_secret(key) if in_env else is_secret_flag(key))
            if secret and isinstance(value, list):  # a grid axis: distinct placeholders keep the grid valid
                out[key] = [replace(v) if replace else f"{REDACTED}{i + 1}" for i, v in enumerate(value)]
            elif secret and not isinstance(value, dict):
                out[key] = replace(value) if replace else REDACTED
            else:
                out[key] = redact_mapping(value, key == "env", replace)
        return out
    if isinstance(data, list):
        return [redact_mapping(v, in_env, replace) for v in data]
    return data
