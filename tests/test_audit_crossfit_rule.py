"""`audit.crossfit_rule`: how eps_emp's cross-fit chooses its rule on the choosing fold (issue 41).

`lower_bound` (the default) takes the (attack, threshold, inequality) with
the highest 95% lower bound on the choosing fold; `estimate` (the old rule)
the highest smoothed point estimate among thresholds with `min_count` errors.
Both are measured once on the other fold. Known answers on deterministic
seeds: the rule is selectable (config, summarise), on a planted leak the
held-out estimate is at least as high under the new rule, and on the null it
stays centred near 0 with a much smaller spread.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from synbench.audit import AuditOptions
from synbench.audit.crossfit import CROSSFIT_RULES, _best_rule, cross_fitted_epsilon, fold_roc, target_folds
from synbench.audit.summary import summarise
from synbench.core import schema
from synbench.core.errors import ConfigError

N_TARGETS, GAMES = 1050, 200  # about the calibration bench's one-run audit (1,000 canaries and 50 outliers)


def game(g: int, leak: float = 0.0, shift: float = 6.0) -> tuple[list[np.ndarray], np.ndarray]:
    """Two attacks on one one-run game: noise, plus `shift` on a `leak` share of the members (a planted leak
    whose leaked members stand out, as a copied document does)."""
    rng = np.random.default_rng([g, 41])
    members = rng.random((1, N_TARGETS)) < 0.5
    attacks = [
        rng.normal(size=(1, N_TARGETS)) + shift * (members & (rng.random((1, N_TARGETS)) < leak)) for _ in range(2)
    ]
    return attacks, members


def rule_of(rule: str) -> dict[str, Any]:
    """The cross-fit's keywords for `rule`, the rest at the audit's defaults (AuditOptions, as summarise reads them)."""
    audit = AuditOptions()
    return {"min_count": audit.min_count, "rule": rule, "confidence": audit.confidence}


def estimates(rule: str, leak: float = 0.0, games: int = GAMES) -> np.ndarray:
    values = []
    for g in range(games):
        attacks, members = game(g, leak)
        values.append(
            cross_fitted_epsilon(attacks, members, target_folds(np.zeros(N_TARGETS), g), 0.0, **rule_of(rule))
        )
    return np.array(values)


def test_the_rule_is_a_typed_option_with_the_new_rule_by_default() -> None:
    assert AuditOptions().crossfit_rule == "lower_bound" and CROSSFIT_RULES == ("lower_bound", "estimate")
    assert schema.typed(AuditOptions, {"crossfit_rule": "estimate"}, "audit").crossfit_rule == "estimate"
    with pytest.raises(ConfigError, match="audit.crossfit_rule='max' is unknown; choose one of lower_bound, estimate"):
        schema.typed(AuditOptions, {"crossfit_rule": "max"}, "audit")
    with pytest.raises(ValueError, match="crossfit rule 'max' is unknown"):
        estimates("max", games=1)


@pytest.mark.parametrize("rule", CROSSFIT_RULES)
def test_summarise_reports_the_configured_rule(rule: str) -> None:
    """Known answer: the headline eps_emp is the cross-fit under `audit.crossfit_rule`, and the two rules differ on
    this leaky game (so the option is not ignored)."""
    attacks, members = game(3, leak=0.1, shift=3.0)
    out, _, _ = summarise(dict(zip("ab", attacks)), members, AuditOptions(mode="one_run", crossfit_rule=rule), 0.0)
    folds = target_folds(np.zeros(N_TARGETS), 0)
    assert out["eps_emp"] == cross_fitted_epsilon(attacks, members, folds, 0.0, **rule_of(rule))
    other = CROSSFIT_RULES[1 - CROSSFIT_RULES.index(rule)]
    assert out["eps_emp"] != cross_fitted_epsilon(attacks, members, folds, 0.0, **rule_of(other))


def test_the_lower_bound_rule_is_chosen_on_the_choosing_fold_only() -> None:
    """Changing the measuring fold's scores leaves the chosen rule as it was: the choice reads fold 0 only."""
    attacks, members = game(5, leak=0.25)
    folds = target_folds(np.zeros(N_TARGETS), 5)
    chosen = _best_rule(fold_roc(attacks[0], members, folds == 0), 0.0, 5, "lower_bound", 0.95)
    scrambled = attacks[0].copy()
    scrambled[:, folds == 1] = np.random.default_rng(0).normal(size=(1, int((folds == 1).sum())))
    assert _best_rule(fold_roc(scrambled, members, folds == 0), 0.0, 5, "lower_bound", 0.95) == chosen


def test_the_lower_bound_rule_raises_the_estimate_under_a_planted_leak() -> None:
    """A quarter of the members leaked: the held-out estimate under the new rule is at least as high in every game
    and higher on average (the old rule cannot pick a threshold with fewer than min_count false positives, where
    a leak that stands out is seen best)."""
    new, old = estimates("lower_bound", leak=0.25, games=40), estimates("estimate", leak=0.25, games=40)
    assert (new >= old - 1e-9).all() and new.mean() > old.mean() + 1.0, (new.mean(), old.mean())


def test_the_lower_bound_rule_stays_centred_and_steadier_under_the_null() -> None:
    """Attacks that know nothing, 200 games: under the new rule the mean estimate is within three standard errors
    of 0 and its spread over games far below the old rule's."""
    new, old = estimates("lower_bound"), estimates("estimate")
    se = new.std(ddof=1) / math.sqrt(len(new))
    assert abs(new.mean()) < 3 * se, (new.mean(), se)
    assert new.std(ddof=1) < 0.15 < 0.25 < old.std(ddof=1), (new.std(ddof=1), old.std(ddof=1))
