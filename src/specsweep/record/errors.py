"""The error a user's configuration causes, shared by the modules that check one (config, names, factors,
environment)."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration problem, worded for the user: which key, what is wrong, how to fix it.

    ``key`` is the key path it is about when the message does not start with it (schema errors);
    ``config_errors`` finds it in the user's files. ``alternatives``: other key paths the setting may be
    written at (an engine's args or a configuration's); the first written one is named, else ``key``'s
    deepest written parent."""

    def __init__(self, message: str, key: tuple[str, ...] = (), alternatives: tuple[tuple[str, ...], ...] = ()) -> None:
        super().__init__(message)
        self.key = key
        self.alternatives = alternatives
