"""The error a user's configuration causes, shared by the modules that check one (config, names, factors,
environment)."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration problem, worded for the user: which key, what is wrong, how to fix it."""
