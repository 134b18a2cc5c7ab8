"""Comparing what plugins return: numbers, and values compared in full (a NaN equal to itself)."""

from __future__ import annotations

import numbers
from typing import Any, Mapping

import numpy as np


def is_number(value: object) -> bool:
    """A real number (numpy scalars included), not a bool: what results.json can hold as a metric or budget."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def canonical(value: object) -> Any:
    """A comparable copy of a returned value: arrays in full (numpy's repr elides long ones), NaN equal to NaN."""
    if isinstance(value, np.ndarray):
        return ("array", value.shape, canonical(value.tolist()))
    if isinstance(value, Mapping):
        return tuple(sorted((repr(k), canonical(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v) for v in value)
    return repr(value)
