"""Known-answer tests of the gain over public knowledge (synbench.report.gain): simulated cells with a known seed
variance and a known true gain, so the pooled interval must cover at its nominal rate and a gain of the stated
smallest detectable size must be detected at the stated power."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from synbench.report.gain import (
    INCONCLUSIVE,
    NO_CLAIM,
    NO_GAIN,
    POWER,
    PRIVATE_LEARNING,
    TARGET_GAIN,
    gain,
    own_variance,
    pooled_variance,
)

CONFIDENCE = 0.95
SIGMA, SIGMA_PUBLIC = 0.06, 0.02  # one seed's SD on a generator row and on the public baseline
ROWS, SEEDS, PUBLIC_SEEDS = 9, 3, 10  # the demo grid's shape: 9 generator rows at 3 seeds, a cheap baseline at 10
DRAWS = 1500


def simulate(rng: np.random.Generator, true_gain: float) -> tuple[list[np.ndarray], np.ndarray]:
    """One table: row 0 has `true_gain` over the baseline, the other rows none; every row's seeds share SIGMA."""
    rows = [rng.normal(0.5 + (true_gain if i == 0 else 0.0), SIGMA, SEEDS) for i in range(ROWS)]
    return rows, rng.normal(0.5, SIGMA_PUBLIC, PUBLIC_SEEDS)


def first_row_gain(rows: list[np.ndarray], public: np.ndarray, pool: bool = True):
    pooled = pooled_variance(rows)[0] if pool else None
    return gain(rows[0], public, CONFIDENCE, pooled)


@pytest.mark.parametrize("pool", [True, False])
def test_the_interval_covers_the_true_gain_at_its_nominal_rate(pool: bool) -> None:
    rng = np.random.default_rng(0)
    covered, widths = 0, []
    for _ in range(DRAWS):
        rows, public = simulate(rng, 0.1)
        found = first_row_gain(rows, public, pool)
        covered += abs(found.mean - 0.1) <= found.half_width
        widths.append(found.half_width)
    # binomial SD of the rate at 1,500 draws is 0.6%; 4 SD either side
    assert abs(covered / DRAWS - CONFIDENCE) < 0.024
    if pool:  # 16+ degrees of freedom instead of 2: the interval is about half as wide as a row's own
        assert np.median(widths) < 0.6 * 2 * stats.t.ppf(0.975, SEEDS - 1) * SIGMA / math.sqrt(SEEDS)


def test_pooling_halves_the_interval_the_issue_measured() -> None:
    """At 3 seeds a row's own t interval (df 2, against a deterministic baseline) is about twice as wide as the
    pooled one (df 18 here)."""
    rng = np.random.default_rng(1)
    rows, _ = simulate(rng, 0.0)
    public = np.full(PUBLIC_SEEDS, 0.5)
    own, pooled = first_row_gain(rows, public, False), first_row_gain(rows, public, True)
    assert pooled.pooled and not own.pooled
    assert pooled.df == ROWS * (SEEDS - 1) and own.df == SEEDS - 1
    assert pooled.interval_quantile < 0.6 * own.interval_quantile


def test_a_gain_of_the_smallest_detectable_size_is_detected_at_the_stated_power() -> None:
    """Plant the true gain at the design's smallest detectable gain (computed from the true variances, the design's
    degrees of freedom): the verdict "private learning" must come out in about POWER of the draws."""
    df = ROWS * (SEEDS - 1)
    se = math.sqrt(SIGMA**2 / SEEDS + SIGMA_PUBLIC**2 / PUBLIC_SEEDS)
    planted = (stats.t.ppf(0.975, df) + stats.t.ppf(POWER, df)) * se
    rng = np.random.default_rng(2)
    found = [first_row_gain(*simulate(rng, planted)) for _ in range(DRAWS)]
    detected = np.mean([g.verdict == PRIVATE_LEARNING for g in found])
    assert abs(detected - POWER) < 0.045
    # and each draw's own estimate of that size is near it (the median within 10%)
    assert abs(np.median([g.detectable for g in found]) / planted - 1) < 0.1


def test_no_gain_is_private_learning_at_most_at_the_one_sided_level() -> None:
    rng = np.random.default_rng(3)
    flagged = np.mean([first_row_gain(*simulate(rng, 0.0)).verdict == PRIVATE_LEARNING for _ in range(DRAWS)])
    assert flagged < (1 - CONFIDENCE) / 2 + 0.015


def test_rows_with_unequal_variances_are_not_pooled() -> None:
    rng = np.random.default_rng(4)
    rows = [rng.normal(0.5, 0.001, 8), rng.normal(0.5, 0.2, 8), rng.normal(0.5, 0.2, 8)]
    pooled, p_value = pooled_variance(rows)
    assert pooled is None and p_value < 0.05
    equal, p_equal = pooled_variance([rng.normal(0.5, 0.05, 8) for _ in range(3)])
    assert equal is not None and equal.df == 21 and p_equal >= 0.05


def test_rows_without_spread_carry_nothing_to_pool() -> None:
    pooled, p_value = pooled_variance([[0.5, 0.5, 0.5], [0.4, 0.45, 0.5], [0.3]])
    assert pooled is None and math.isnan(p_value)  # one row with a spread is not enough


def test_the_three_states_and_no_claim() -> None:
    public = [0.5, 0.51, 0.49, 0.5, 0.5, 0.52, 0.48, 0.5, 0.5, 0.5]
    tight = own_variance([0.0, 0.01, -0.01])
    assert gain([0.7, 0.71, 0.69], public, CONFIDENCE, tight).verdict == PRIVATE_LEARNING
    quiet = gain([0.5, 0.51, 0.49], public, CONFIDENCE, tight)
    assert quiet.verdict == NO_GAIN and quiet.detectable <= TARGET_GAIN
    assert str(quiet).endswith(f"({NO_GAIN}; detects {quiet.detectable:.3f} with 80% power)")
    noisy = gain([0.4, 0.6, 0.5], public, CONFIDENCE)
    assert noisy.verdict == INCONCLUSIVE and noisy.detectable > TARGET_GAIN
    seeds = noisy.seeds_for()
    assert seeds is not None and seeds > 3 and f"{seeds} seeds would detect 0.05" in str(noisy)
    assert gain([0.6], public, CONFIDENCE).verdict == NO_CLAIM  # one seed, nothing pooled
    assert gain([0.6], public, CONFIDENCE, tight).verdict == PRIVATE_LEARNING  # one seed, a pooled variance


def test_seeds_for_is_the_smallest_count_that_reaches_the_target() -> None:
    found = gain([0.4, 0.6, 0.5], [0.5] * 5 + [0.5001] * 5, CONFIDENCE)
    seeds = found.seeds_for()
    assert seeds is not None
    se = lambda n: math.sqrt(found.row_variance / n + found.public_term)  # noqa: E731
    quantiles = lambda n: stats.t.ppf(0.975, n - 1) + stats.t.ppf(POWER, n - 1)  # noqa: E731
    assert quantiles(seeds) * se(seeds) <= TARGET_GAIN < quantiles(seeds - 1) * se(seeds - 1)


def test_a_baseline_too_uncertain_for_any_seed_count_says_so() -> None:
    found = gain([0.5, 0.52, 0.48], [0.2, 0.8, 0.5], CONFIDENCE)
    assert found.seeds_for() is None and "more seeds alone would not detect" in str(found)
