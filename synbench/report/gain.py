"""A row's gain over public knowledge: its interval, the smallest gain its design detects, and the verdict.

A generator row's seeds and the public baseline's share no randomness (each
job draws its own synthetic set and fits its own classifier), so pairing by
seed removes nothing: the gain is the difference of two independent means,
with the variance of each (Welch). Few seeds per row (3 in the demo grid)
leave a t interval with 2 degrees of freedom, twice as wide as the spread
justifies; so the generator side pools its seed variance over the rows of
one table, which share the eval set, the classifier and the synthetic size:
s² = Σ (n_i − 1) s_i² / Σ (n_i − 1), with Σ (n_i − 1) degrees of freedom.
Pooling assumes the rows' seed variances are equal; it is used only where
Bartlett's test does not reject that at `HOMOGENEITY_LEVEL` over the rows
with two seeds or more and a spread, and each row then says so (`pooled`);
where it rejects, or fewer than two rows have a spread, each row keeps its own
seeds' variance. The baseline side keeps its own (cheap baselines run at more
seeds, which makes it small; a deterministic baseline adds none).

The smallest detectable gain is the true gain that the one-sided test behind
the interval's lower end (level (1 − confidence) / 2) detects with
probability `POWER`: (t_{1−α/2, df} + t_{POWER, df}) · SE. `seeds_for` says
how many generator seeds would bring it down to `TARGET_GAIN`, keeping the
baseline as it is.

The verdict has three states, worded like the audit's: "private learning"
(the interval's lower end is above 0); "no gain over public" (the lower end
is not, and either the design detects a gain of `TARGET_GAIN` with `POWER`,
so a gain that size would have shown, or the interval's upper end is below
it); otherwise "inconclusive", with the detectable gain and the seeds it
would take. A row with no variance to go on (one seed
and nothing pooled) makes no claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from synbench.report.stats import Estimate

POWER = 0.8  # the probability of detection a smallest detectable gain is stated at
TARGET_GAIN = 0.05  # the gain a design should detect; "no gain over public" needs it detected with POWER
HOMOGENEITY_LEVEL = 0.05  # Bartlett's test level below which rows' seed variances are not pooled
MAX_SEEDS = 1000  # the largest seed count `seeds_for` searches

PRIVATE_LEARNING, NO_GAIN, INCONCLUSIVE, NO_CLAIM = (
    "private learning",
    "no gain over public",
    "inconclusive",
    "no claim (1 seed)",
)


@dataclass(frozen=True)
class SeedVariance:
    """The variance of one seed's value and its degrees of freedom; `pooled` when it comes from several rows."""

    variance: float
    df: float
    pooled: bool = False


def own_variance(values: Sequence[float]) -> SeedVariance | None:
    """The sample variance of these seeds' values; None with fewer than two."""
    array = np.asarray(values, dtype=float)
    if array.size < 2 or not np.isfinite(array).all():
        return None
    return SeedVariance(float(array.var(ddof=1)), float(array.size - 1))


def pooled_variance(rows: Sequence[Sequence[float]]) -> tuple[SeedVariance | None, float]:
    """The seed variance pooled over rows, and Bartlett's p-value for equal variances (NaN where not tested).

    Rows with fewer than two finite values or no spread carry no variance to pool; with fewer than two rows
    left, or where Bartlett's test rejects at `HOMOGENEITY_LEVEL`, there is no pooled variance (None)."""
    from scipy import stats

    spread = [
        np.asarray(r, dtype=float)
        for r in rows
        if len(r) >= 2 and np.isfinite(r).all() and np.var(np.asarray(r, dtype=float)) > 0
    ]
    if len(spread) < 2:
        return None, math.nan
    p_value = float(stats.bartlett(*spread).pvalue)
    if p_value < HOMOGENEITY_LEVEL:
        return None, p_value
    df = sum(r.size - 1 for r in spread)
    variance = sum((r.size - 1) * r.var(ddof=1) for r in spread) / df
    return SeedVariance(float(variance), float(df), pooled=True), p_value


@dataclass(frozen=True)
class Gain:
    """A row's mean minus the public baseline's, with the Welch standard error of two independent means."""

    mean: float
    se: float
    df: float  # Welch-Satterthwaite degrees of freedom (the generator side's alone when the baseline adds none)
    n: int  # the row's seeds
    n_public: int  # the baseline's seeds
    pooled: bool  # whether the row's seed variance is pooled over the table's rows
    confidence: float | None  # the interval's level; None: ± one standard error
    row_variance: float  # one seed's variance on the row's side (pooled or its own)
    public_term: float  # the baseline's contribution to the squared standard error (its variance / its seeds)

    def quantile(self, probability: float) -> float:
        from scipy import stats

        return (
            float(stats.t.ppf(probability, self.df)) if math.isfinite(self.df) else float(stats.norm.ppf(probability))
        )

    @property
    def interval_quantile(self) -> float:
        """The interval's t quantile; 1 with no confidence level (± one standard error, as `stats.estimate`)."""
        return 1.0 if self.confidence is None else self.quantile((1 + self.confidence) / 2)

    @property
    def half_width(self) -> float:
        return self.interval_quantile * self.se

    @property
    def detectable(self) -> float:
        """The smallest true gain the one-sided test behind the interval's lower end detects with probability
        `POWER`."""
        return (self.interval_quantile + self.quantile(POWER)) * self.se

    def estimate(self) -> Estimate:
        """The gain as the tables' mean ± half-width."""
        return Estimate(self.mean, self.half_width, self.n)

    def seeds_for(self, target: float = TARGET_GAIN) -> int | None:
        """The generator seeds that would make `detectable` at most `target` (the baseline as it is, the same
        degrees of freedom per added seed as now); None when the baseline's own uncertainty, or `MAX_SEEDS`,
        stands in the way."""
        if self.detectable <= target:
            return self.n
        for seeds in range(self.n + 1, MAX_SEEDS + 1):
            se = math.sqrt(self.row_variance / seeds + self.public_term)
            grown = replace(self, se=se, df=self.df + seeds - self.n, n=seeds)
            if grown.detectable <= target:
                return seeds
        return None

    @property
    def verdict(self) -> str:
        if not math.isfinite(self.se):
            return NO_CLAIM
        if self.mean - self.half_width > 0:
            return PRIVATE_LEARNING
        rules_out = self.mean + self.half_width < TARGET_GAIN  # the interval itself excludes a gain of that size
        return NO_GAIN if rules_out or self.detectable <= TARGET_GAIN else INCONCLUSIVE

    def words(self) -> str:
        """The verdict with what the design could have seen, for a table cell or a summary line."""
        if self.verdict == NO_CLAIM:
            return NO_CLAIM
        sees = f"detects {self.detectable:.3f} with {POWER:.0%} power"
        if self.verdict != INCONCLUSIVE:
            return f"{self.verdict}; {sees}"
        seeds = self.seeds_for()
        needs = (
            f"{seeds} seeds would detect {TARGET_GAIN:g}"
            if seeds
            else f"more seeds alone would not detect {TARGET_GAIN:g}"
        )
        return f"{INCONCLUSIVE}: {sees}; {needs}"

    def __str__(self) -> str:
        if self.verdict == NO_CLAIM:
            return f"{self.mean:.3f}: {NO_CLAIM}"
        return f"{self.mean:.3f} ± {self.half_width:.3f} ({self.words()})"


def gain(
    row: Sequence[float], public: Sequence[float], confidence: float | None, pooled: SeedVariance | None = None
) -> Gain | None:
    """The gain of a row's seed values over the public baseline's; `pooled` replaces the row's own variance (see
    `pooled_variance`). None when either side has no value."""
    mine, theirs = np.asarray(row, dtype=float), np.asarray(public, dtype=float)
    if mine.size == 0 or theirs.size == 0:
        return None
    variance = pooled if pooled is not None else own_variance(mine)
    base = own_variance(theirs)
    if variance is None or base is None:  # one seed on a side, and nothing pooled: no variance to go on
        nan = math.nan
        return Gain(float(mine.mean() - theirs.mean()), nan, nan, mine.size, theirs.size, False, confidence, nan, nan)
    row_term, public_term = variance.variance / mine.size, base.variance / theirs.size
    se = math.sqrt(row_term + public_term)
    if public_term == 0:
        df = variance.df
    elif row_term == 0:
        df = base.df
    else:
        df = (row_term + public_term) ** 2 / (row_term**2 / variance.df + public_term**2 / base.df)
    return Gain(
        float(mine.mean() - theirs.mean()), se, df, mine.size, theirs.size, variance.pooled, confidence,
        variance.variance, public_term,
    )  # fmt: skip
