"""What a session never writes in clear, worked out once per session (it was four times, from slightly
different inputs): ``declared`` values (the API key, ``{from_env}`` secrets) wherever they occur whatever
carries them, and ``by_name`` values of variables and flags named like secrets (record/redact.py says which
of those can be replaced without damaging data)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from specsweep.engines.base import Engine, render_flags
from specsweep.plan import references
from specsweep.record.configuration import Configuration
from specsweep.record.redact import REDACTED, redact_values, secret_arg_values, secret_values, without_secrets


@dataclass(frozen=True)
class Hidden:
    declared: list[str]
    by_name: list[str]

    @classmethod
    def of(cls, configuration: Configuration, engine: Engine, environ: Mapping[str, str]) -> Hidden:
        """Before launch: the configuration's secrets and the calling environment's (an error may quote
        either)."""
        return cls(
            declared=[engine.api_key() or "", *references.values_of(configuration)],
            by_name=secret_values({**environ, **configuration.env})
            + secret_arg_values(render_flags(configuration.args, {})),
        )

    def launched(self, argv: list[str], env: Mapping[str, str]) -> Hidden:
        """As launched: the secrets of the argv and environment the engine got, which its log may echo."""
        return replace(self, by_name=secret_values(dict(env)) + secret_arg_values(argv))

    def error(self, raised: BaseException) -> BaseException:
        return without_secrets(raised, self.by_name, self.declared)

    def log(self, text: Any) -> Any:
        """A server log's text or bytes with every secret replaced."""
        return redact_values(text, self.by_name, self.declared)

    def prompt(self, text: str) -> str:
        """A rendered prompt: only declared values (a prompt's own words are no flag's value)."""
        return redact_values(text, [], self.declared)

    def written(self, argv_or_env: Any) -> Any:
        """An environment (mapping) or argv (list) with every element equal to a declared value redacted,
        whatever the name of the variable or flag that carries it."""
        secret = {v for v in self.declared if v}
        if isinstance(argv_or_env, dict):
            return {k: REDACTED if v in secret else v for k, v in argv_or_env.items()}
        return [REDACTED if v in secret else v for v in argv_or_env]
