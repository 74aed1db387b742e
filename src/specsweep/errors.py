"""The error every configuration check raises (config, design, environment), in one place."""


class ConfigError(ValueError):
    """A configuration problem, worded for the user: which key, what is wrong, how to fix it."""
