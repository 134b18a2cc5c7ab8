"""User-facing errors.

A `SynBenchError` is bad input the user can fix: its message names the file,
line, field or value and says what to do. The app prints it without a
traceback. Messages never quote private document text.
"""
from __future__ import annotations


class SynBenchError(Exception):
    """Bad input or configuration; the message says what to fix."""


class ConfigError(SynBenchError):
    """A configuration value is invalid or missing."""


class DataError(SynBenchError):
    """A dataset file or record is invalid."""


class PluginError(SynBenchError):
    """A plugin name is unknown, provided twice, or cannot be built."""
