"""Errors every layer raises; this module imports nothing of boatload, so any module may use it."""


class ConfigError(ValueError):
    """A configuration mistake, told in one line that names the field."""
