"""Redaction of secrets in anything specsweep writes to disk."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, AnyStr

from specsweep.record.cache import sha256_bytes

REDACTED = "<redacted>"
# An environment variable (or an ``env:`` grid axis) is secret when one of its words ends with a secret
# word: HF_TOKEN, OPENAI_API_KEY, DB_PASSWORD, HUGGINGFACEHUBTOKEN; not TOKENIZERS_PARALLELISM,
# KEYBOARD_LAYOUT or max_tokens, whose values (false, 500) would otherwise be scrubbed out of every log and
# archive member.
SECRET_WORDS = ("token", "key", "secret", "password", "passwd", "credential", "credentials")
# A flag is secret only by this short list (docs/reliability.md): the engines' flags that carry a credential.
# A flag's name alone says nothing: SGLang's --speculative-token-map is a path, llama-server's --api-key-file
# and vLLM's --ssl-keyfile are paths, and a record that hid them could not relaunch what it measured.
# Any other secret is declared (``{from_env: NAME}``, ``api_key_env``) and redacted by its value.
SECRET_FLAGS = frozenset(
    {"--api-key", "--admin-api-key", "--hf-token", "-hft", "--ssl-keyfile-password", "--token", "--password"}
)


def is_secret(name: str) -> bool:
    """Whether ``name``'s value is a secret by the name alone: a flag (``--x``) of ``SECRET_FLAGS``, or a
    variable one of whose words ends with a ``SECRET_WORDS`` word."""
    if name.startswith("-"):
        flag = name.partition("=")[0].partition(".")[0]
        return flag in SECRET_FLAGS
    words = re.split(r"[-_.:]", name.partition("=")[0].lower())
    return any(word.endswith(SECRET_WORDS) for word in words)


# Config keys whose value is the name of an environment variable, never a secret: the config must still
# validate (and an archive rebuild) with it. Variable names under env: are keys, not values, and stay as written.
VARIABLE_NAME_KEYS = frozenset({"api_key_env"})


def names_a_variable(key: str) -> bool:
    return key in VARIABLE_NAME_KEYS


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return {k: (REDACTED if is_secret(k) else v) for k, v in sorted(env.items())}


def redact_argv(argv: list[str]) -> list[str]:
    """Hide the value after a secret flag (``--api-key X``, ``--hf-token=X``; ``SECRET_FLAGS``)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
        elif arg.startswith("-") and is_secret(arg):
            name, eq, _ = arg.partition("=")
            out.append(f"{name}={REDACTED}" if eq else arg)
            hide_next = not eq
        else:
            out.append(arg)
    return out


# A value searched for and replaced in text must not occur in ordinary data: at least this long, and
# neither a number nor a lowercase word (an env var SOME_KEY=16 must not turn every "16" of an archive
# into <redacted>, nor SOME_TOKEN=false every "false").
MIN_SUBSTITUTED_CHARS = 8


def substitutable(value: str) -> bool:
    """Whether replacing ``value`` wherever it occurs can only hit the secret itself."""
    return len(value) >= MIN_SUBSTITUTED_CHARS and not re.fullmatch(r"[-+0-9.eE_: ]+|[a-z]+", value)


def redact_values(text: AnyStr, secrets: Iterable[str], declared: Iterable[str] = ()) -> AnyStr:
    """Replace literal secret values (echoed by a server into its log, or in archive members). ``secrets``
    (values of variables and flags named like secrets) that are not ``substitutable`` are left alone, since
    replacing them would damage data that is not secret. ``declared`` secrets (an ``api_key_env`` variable, a
    ``{from_env: NAME}``) go whatever their form: a short or numeric one wherever it stands alone."""
    for secret in secrets:
        if substitutable(secret):
            text = _replace(text, secret)
    for secret in declared:
        if secret and substitutable(secret):
            text = _replace(text, secret)
        elif secret:
            text = _standing_alone(secret, bytes if isinstance(text, bytes) else str).sub(
                REDACTED.encode() if isinstance(text, bytes) else REDACTED, text
            )
    return text


def _replace(text: AnyStr, secret: str) -> AnyStr:
    if isinstance(text, bytes):
        return text.replace(secret.encode(), REDACTED.encode())
    return text.replace(secret, REDACTED)


def _standing_alone(value: str, kind: type) -> re.Pattern[Any]:
    """``value`` not inside a longer word or number: a declared secret 4242 goes from ``--api-key 4242`` and
    ``'4242'``, not from ``142420``, ``0.4242`` or ``4242.5``."""
    pattern = rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)"
    return re.compile(pattern.encode() if kind is bytes else pattern)


def has_declared(text: str, declared: Iterable[str]) -> bool:
    """Whether ``redact_values`` would replace one of ``declared`` in ``text``."""
    return any(s and _standing_alone(s, str).search(text) for s in declared)


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
    return "sha256:" + sha256_bytes(str(value))[:16]


def redact_mapping(data: Any, replace: Callable[[Any], str] | None = None) -> Any:
    """Redact recursively (e.g. a config) the value of every key named like a secret (``is_secret``:
    env variables, grid values of such variables, ``--api-key`` flags; not counts like ``max_tokens``,
    which must stay valid config).
    ``replace`` maps a secret value to its stand-in (default ``<redacted>``; ``fingerprint`` for params)."""
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            secret = isinstance(key, str) and is_secret(key) and not names_a_variable(key)
            if secret and isinstance(value, list):  # a grid axis: distinct placeholders keep the grid valid
                out[key] = [replace(v) if replace else f"{REDACTED}{i + 1}" for i, v in enumerate(value)]
            elif secret and not isinstance(value, dict):
                out[key] = replace(value) if replace else REDACTED
            else:
                out[key] = redact_mapping(value, replace)
        return out
    if isinstance(data, list):
        return [redact_mapping(v, replace) for v in data]
    return data


def without_secrets(error: BaseException, secrets: Iterable[str], declared: Iterable[str] = ()) -> BaseException:
    """``error`` itself when no secret value appears in its message or those it was raised from; else an
    exception of the same kind (RuntimeError where that cannot be made) whose message has them redacted,
    to be raised ``from None`` so the chain that held them is not printed. A server that fails at start
    echoes its argv (``--api-key X``) into the log tail that becomes the message, error.txt and the console."""
    secrets, declared = [s for s in secrets if len(s) >= 4], [s for s in declared if s]
    chain, seen = [], error
    while seen is not None and len(chain) < 16:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    text = "\n".join(str(e) for e in chain)
    if not any(secret in text for secret in secrets) and not has_declared(text, declared):
        return error
    message = redact_values(
        "\n".join(f"{type(e).__name__}: {e}" if i else str(e) for i, e in enumerate(chain)), secrets, declared
    )
    try:
        clean = type(error)(message)
    except Exception:  # an exception type whose constructor takes other arguments
        clean = RuntimeError(message)
    clean = clean if str(clean) == message else RuntimeError(message)
    return clean.with_traceback(error.__traceback__)  # where it failed (code lines only, no values)
