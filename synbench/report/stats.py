"""Mean and confidence interval over seeds, and how numbers and epsilons are written in a report.

The interval is Student's t (two-sided, `confidence` level) on the seeds'
values: sweeps have few seeds (2 to 10), where a normal interval would be
too narrow. With two seeds t is 12.7 at 95%, so the interval is honest
about how little two seeds say. A cell with one seed shows its value alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

MISSING = "–"
# Macro F1 leads (the job's summary, the report's columns) when the majority baseline's micro F1 is at least this
# many times the random baseline's: micro F1 (accuracy, on single-label data) then mostly counts the majority
# class, so a generator that writes only that class looks good; macro F1 weighs every class alike.
IMBALANCE_RATIO = 1.5


@dataclass(frozen=True)
class Estimate:
    """The mean of `n` values and the half-width of its interval, or their standard error (NaN when n is 1 or a
    value is infinite)."""

    mean: float
    half_width: float
    n: int

    def __str__(self) -> str:
        if math.isnan(self.half_width):
            return format_number(self.mean)
        return f"{format_number(self.mean)} ± {format_decimal(self.half_width)}"


def estimate(values: Iterable[float], confidence: float | None) -> Estimate | None:
    """The estimate over the values that are not NaN; None when there are none. `confidence=None`: mean ± the
    standard error (SD / sqrt(n)), the scale on which two rows are compared ("more than 2 SE apart")."""
    array = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    if array.size == 0:
        return None
    mean = float(array.mean())
    if array.size == 1 or not np.isfinite(array).all():
        return Estimate(mean, math.nan, int(array.size))
    if confidence is None:
        quantile = 1.0
    else:
        from scipy import stats  # here, not at import: every job imports this module for `macro_f1_leads`

        quantile = float(stats.t.ppf((1 + confidence) / 2, df=array.size - 1))
    return Estimate(mean, quantile * float(array.std(ddof=1)) / math.sqrt(array.size), int(array.size))


def macro_f1_leads(majority_f1: float | None, random_f1: float | None) -> bool:
    """Whether macro F1 should be read first: the labels are imbalanced (see IMBALANCE_RATIO); False when unknown."""
    known = all(isinstance(v, float) and math.isfinite(v) for v in (majority_f1, random_f1))
    return known and majority_f1 >= IMBALANCE_RATIO * random_f1  # type: ignore[operator]


def format_number(value: float) -> str:
    """Three decimals (metrics live in [0, 1] or near it), whole numbers (counts) as such, ∞ for infinities."""
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if math.isnan(value):
        return "nan"
    return str(int(value)) if value.is_integer() else format_decimal(value)


def format_decimal(value: float) -> str:
    return f"{value:.1f}" if abs(value) >= 100 else f"{value:.3f}"


def format_eps(eps: float) -> str:
    """A nominal epsilon as configured: 1, 0.5, ∞ (or ? when a results file had none)."""
    if math.isnan(eps):
        return "?"
    return "∞" if math.isinf(eps) else f"{eps:g}"


def format_job_eps(eps: float, control: bool) -> str:
    """A job's nominal epsilon as tables show it; a control's (`release.is_control_noise`) says it was not applied."""
    if not control:
        return format_eps(eps)
    return "control" if math.isinf(eps) else f"control ({format_eps(eps)} not applied)"


def interval_note(confidence: float) -> str:
    """The sentence every report states once, so no reader guesses what ± means."""
    return (
        f"Cells with several seeds show mean ± the half-width of the two-sided {confidence:.0%} Student t "
        f"interval over seeds (n = the seeds column); a cell with one seed shows its value."
    )
