"""User-facing errors.

A `SynBenchError` is bad input the user can fix: its message names the file,
line, field or value and says what to do. The app prints it without a
traceback. Messages never quote private document text.
"""

from __future__ import annotations

import difflib
from typing import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """The ` (did you mean X?)` an error message puts after a name it does not know: the nearest of `choices`, or
    nothing when none is near, so a typo (`generator=cpy`, `generator.epoch`) is answered with the fix."""
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.5)
    return f" (did you mean {close[0]}?)" if close else ""


class SynBenchError(Exception):
    """Bad input or configuration; the message says what to fix."""


class ConfigError(SynBenchError):
    """A configuration value is invalid or missing."""


class DataError(SynBenchError):
    """A dataset file or record is invalid."""


class PluginError(SynBenchError):
    """A plugin name is unknown, provided twice, or cannot be built."""


def require_count(value: object, key: str, minimum: int) -> None:
    """Refuse a config value `key` that is not a whole number of at least `minimum` (a bool is not a number here),
    naming the key and what it must be."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        bound = "a positive whole number" if minimum == 1 else f"a whole number of at least {minimum}"
        raise ConfigError(f"{key}={value!r} must be {bound}")


# The most synthetic documents one job may ask for: far above any benchmark's (the paper's largest sets are tens
# of thousands), and far below where the output alone would exhaust memory (1e12 documents died after 20 s).
MAX_SYNTHETIC = 10_000_000


def check_n_synthetic(value: object, key: str, null_means: str, minimum: int = 1) -> None:
    """The one check of every `n_synthetic` key (`task.`, `audit.`, `model_audit.`, `contamination.ablation.`,
    `generator.` of a command program): null, which asks for `null_means`, or a whole number from `minimum` to
    `MAX_SYNTHETIC` (a bool is not a number here); the refusal names the key and both choices."""
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_SYNTHETIC
    ):
        raise ConfigError(
            f"{key}={value!r} is invalid: use a whole number from {minimum} to at most {MAX_SYNTHETIC:,}, or null "
            f"for {null_means}"
        )
