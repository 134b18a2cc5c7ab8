"""From attack scores and the design's membership truth to the audit's `results.json` figures.

Which number supports which claim:

- `eps_emp_lower` is the evidence: a one-sided lower bound on epsilon at
  `confidence`; above the nominal eps it shows a violation. It is the larger
  of two bounds, each computed at half the failure probability so the larger
  still holds at `confidence`:
  `eps_emp_lower_holdout` (choice on `select_share` of the targets, one
  test on the rest) and `eps_emp_lower_bonferroni` (every choice tested, Bonferroni).
  Both are Steinke-Nasr-Jagielski binomial bounds (synbench.audit.evidence):
  on the run's coins in `one_run` mode, on the pair game in `k_subsets` mode
  (which run of a pair held each target), so neither assumes that a run's
  trials are independent. `p_value` is the combined test's p-value for the
  claim (`claim_epsilon`, `claim_delta`): the report's verdicts over seeds
  and claims rest on it. `k_subsets` also reports the Clopper-Pearson bound
  on the pooled run x target ROC as `eps_emp_lower_conditional`: valid only
  if those trials were independent, which nothing guarantees.
- `eps_ceiling` beside every `eps_emp_lower` (headline, per kind, per
  attack) is what a perfect attack would have got from the same design,
  through the same `eps_result` (synbench.audit.ceiling), and
  `p_value_floor` its p-value of the claim; `verdict` (violation,
  consistent, inconclusive, no claim) and `verdict_line` read the headline
  bound against its ceiling and the claim it tests, and an inconclusive
  verdict says what design size (`n_needed`, in `n_needed_unit`) a perfect
  attack would need.
- Canaries of k > 1 copies are groups: their figures (`canaries.<key>`)
  test the group claim (k eps, delta sum_{i<k} e^{i eps}), the outliers'
  (eps, delta).
- `gdp_mu_lower` bounds Gaussian-DP's mu the same two ways (Mahloujifar et
  al.'s one-run analysis, on the pair game in `k_subsets` mode, whose pair
  is sqrt(2) mu-GDP; `gdp_mu_lower_conditional` the pooled ROC's) and
  `gdp_eps_lower` is the eps it implies at the audit's delta, which is a bound
  only for mechanisms whose privacy profile is Gaussian (DP-SGD, roughly).
- Several attacks (`attack=[ngram,similarity]`): each attack's figures
  are reported under its name (`ngram.eps_emp_lower`, ...), each a valid
  bound for that attack alone. The headline `eps_emp_lower` combines them
  and still holds at `confidence`: its Bonferroni part spreads the level
  over every (attack, threshold or guess count) it tests, and its held-out
  part picks the attack together with the threshold or guess count on the
  selection fold and tests that one choice on the other targets. Nothing is
  chosen on the targets it is then tested on. The other headline figures
  (AUC, ...) are those of the attack the held-out part chose
  (`attack_chosen`).
- `eps_emp` is an estimate, not evidence: cross-fitted with the attack
  chosen inside the cross-fit, centred under the null, unclipped; the rule
  is the one with the highest 95% lower bound on the choosing fold
  (`audit.crossfit_rule=lower_bound`) or the highest estimate there
  (`estimate`, the old, noisier rule).
  `eps_emp_max` is the old maximum over thresholds, optimistic (about 0.5
  on random scores).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from synbench.audit.ceiling import UNITS, Evidence, ceiling, size_needed, verdict, verdict_line
from synbench.audit.config import AuditOptions
from synbench.audit.crossfit import (
    OperatingPoint,
    cross_fitted_epsilon,
    epsilon_counts_bound,
    holdout_selection,
    target_folds,
)
from synbench.audit.epsilon import bonferroni_epsilon_lower_bound, empirical_epsilon_curve
from synbench.audit.evidence import PAIR_SCALE, GameResult, game_evidence, pair_game
from synbench.audit.fdp import bonferroni_gdp_mu_lower_bound, gdp_mu_lower_bounds_from_counts
from synbench.audit.guesses import grid_counts, guess_shares
from synbench.audit.power import LeakPower, detectable_leak
from synbench.audit.roc import RocCurve
from synbench.core.errors import SynBenchError
from synbench.core.privacy import gdp_epsilon

KIND_NAMES = ("outliers", "canaries")
TYPE_KEYS = (
    "n_targets",
    "auc",
    "eps_emp",
    "eps_emp_lower",
    "gdp_mu_lower",
    "p_value",
    "claim_epsilon",
    "claim_delta",
    "eps_ceiling",
    "p_value_floor",
    "eps_perfect",
)  # reported per target type too
ATTACK_KEYS = (
    "auc",
    "eps_emp",
    "eps_emp_lower",
    "eps_emp_lower_holdout",
    "eps_emp_lower_bonferroni",
    "gdp_mu_lower",
    "p_value",
    "eps_ceiling",
    "eps_perfect",
)
Scores = np.ndarray | Mapping[str, np.ndarray]  # (runs x targets), or one such array per attack


def _roc_pair(
    scores: Sequence[np.ndarray], members: np.ndarray, folds: np.ndarray, counts_bound, bonferroni, confidence: float
) -> tuple[float, float, int, OperatingPoint | None]:
    """(held-out, Bonferroni) ROC bounds over attacks at `confidence` each, the chosen attack and its operating point.

    Bonferroni spreads the level over the inner thresholds of every attack's
    ROC at once (they share the trials, so their counts concatenate).
    """
    chosen_by = [holdout_selection(s, members, folds, counts_bound, confidence) for s in scores]
    chosen = int(np.argmax([c[2] for c in chosen_by]))
    rocs = [RocCurve.from_scores(s, members) for s in scores]
    tp = np.concatenate([r.tp[1 : len(r.tp) - 1] for r in rocs])
    fp = np.concatenate([r.fp[1 : len(r.fp) - 1] for r in rocs])
    return (
        chosen_by[chosen][0],
        bonferroni(tp, fp, rocs[0].n_pos, rocs[0].n_neg, confidence),
        chosen,
        chosen_by[chosen][1],
    )


def group_claim(epsilon: float, delta: float, copies: int) -> tuple[float, float]:
    """The claim an (epsilon, delta)-DP mechanism makes about a group of `copies` records: (k eps, delta sum_{i<k}
    e^{i eps}) (group privacy); a canary with k copies is such a group. No claim (eps = inf) keeps delta."""
    if math.isinf(epsilon):
        return epsilon, delta
    return copies * epsilon, delta * float(sum(math.exp(i * epsilon) for i in range(copies)))


@dataclass(frozen=True)
class Game:
    """The Steinke-Nasr-Jagielski game a set of trials is tested as: one row of scores per attack, its coins and
    their folds, and the factor its eps and delta carry (the pair game's 2)."""

    scores: list[np.ndarray]
    coins: np.ndarray
    folds: np.ndarray
    scale: float


def audit_game(scores: Sequence[np.ndarray], members: np.ndarray, folds: np.ndarray, mode: str) -> Game:
    """The run's coins in one_run mode; in k_subsets mode the pair game (which run of a pair held each target)."""
    if mode == "one_run":
        return Game([np.atleast_2d(s) for s in scores], np.atleast_2d(members), folds, 1.0)
    pairs = [pair_game(s, members) for s in scores]
    return Game([p[0] for p in pairs], pairs[0][1], np.tile(folds, len(members) // 2), PAIR_SCALE)


def eps_result(game: Game, cfg: AuditOptions, delta: float, claim: float = math.inf) -> GameResult:
    """The eps evidence of one game at the audit's level (synbench.audit.evidence.game_evidence): the held-out and
    Bonferroni bounds on the mechanism's eps (the pair game's halved), the p-value of the claim (`claim`,
    `delta`)-DP per trial and the attack the held-out test chose. `bounds` reports it; the ceiling
    (synbench.audit.ceiling) runs this same function on perfect scores."""
    found = game_evidence(
        game.scores,
        game.coins,
        game.folds,
        cfg.guess_fractions,
        1 - cfg.confidence,
        game.scale * delta,
        game.scale * claim,
    )
    return replace(found, holdout=found.holdout / game.scale, bonferroni=found.bonferroni / game.scale)


def eps_evidence(cfg: AuditOptions, delta: float, claim: float = math.inf) -> Evidence:
    """`eps_result` at this config, delta and claim, of (scores per attack, members, folds), as the ceiling takes
    it."""
    return lambda scores, members, folds: eps_result(audit_game(scores, members, folds, cfg.mode), cfg, delta, claim)


def bounds(
    scores: np.ndarray | Sequence[np.ndarray],
    members: np.ndarray,
    folds: np.ndarray,
    cfg: AuditOptions,
    delta: float,
    claim: float = math.inf,
) -> tuple[dict[str, float], OperatingPoint | None, int]:
    """The evidence of one set of targets: held-out and Bonferroni eps bounds, their maximum, its p-value for the
    claim (`claim`, `delta`)-DP per trial (`eps_result`), and the GDP mu bound (synbench.audit.evidence).

    `scores` is one (runs x targets) array or one per attack; the bounds
    combine the attacks and hold at `cfg.confidence`. `folds` (one per
    target) is the held-out split: fold 0 chooses, fold 1 tests. One-run
    mode tests the run's coins; k_subsets mode the pair game, and adds the
    Clopper-Pearson bounds on the pooled run x target ROC as
    `eps_emp_lower_conditional` and `gdp_mu_lower_conditional`: valid only if
    a run's trials were independent, which nothing guarantees. Also returns
    the held-out operating point on the pooled ROC (the plot's mark) and the
    index of the attack the held-out eps test chose.
    """
    scores = [scores] if isinstance(scores, np.ndarray) else list(scores)
    half = 1 - (1 - cfg.confidence) / 2
    game = audit_game(scores, members, folds, cfg.mode)
    found = eps_result(game, cfg, delta, claim)
    chosen = int(found.chosen[0])
    out = {
        "eps_emp_lower_holdout": float(found.holdout[0]),
        "eps_emp_lower_bonferroni": float(found.bonferroni[0]),
        "eps_emp_lower": float(found.bound[0]),
        "p_value": float(found.p_value[0]),
    }
    level, fractions = 1 - cfg.confidence, cfg.guess_fractions
    mu = game_evidence(game.scores, game.coins, game.folds, fractions, level, gdp=True).bound[0] / math.sqrt(game.scale)
    out |= {
        "claim_epsilon": claim,
        "claim_delta": delta,
        "gdp_mu_lower": float(mu),
        "gdp_eps_lower": gdp_epsilon(mu, delta) if mu > 0 and delta > 0 else (float("inf") if mu > 0 else 0.0),
    }
    point = holdout_selection(scores[chosen], members, folds, epsilon_counts_bound(delta), half)[1]
    if cfg.mode == "k_subsets":
        out["eps_emp_lower_conditional"] = max(
            _roc_pair(
                scores,
                members,
                folds,
                epsilon_counts_bound(delta),
                lambda tp, fp, n_pos, n_neg, c: bonferroni_epsilon_lower_bound(
                    tp, fp, n_pos, n_neg, delta, confidence=c
                ),
                half,
            )[:2]
        )
        out["gdp_mu_lower_conditional"] = max(
            _roc_pair(scores, members, folds, gdp_mu_lower_bounds_from_counts, bonferroni_gdp_mu_lower_bound, half)[:2]
        )
    return out, point, chosen


def one_run_best_guess(scores: np.ndarray, members: np.ndarray, cfg: AuditOptions) -> dict[str, int]:
    """The grid point with the most right guesses beyond chance: what the one-run audit's guesses were, for the
    record."""
    shares = guess_shares(cfg.guess_fractions)
    _, guesses, correct = grid_counts(scores, members, shares)
    best = int(np.argmax(2 * correct[0] - guesses[0]))
    return {"guesses": int(guesses[0, best]), "correct": int(correct[0, best])}


@dataclass(frozen=True)
class Claim:
    """The (epsilon, delta)-DP claim a set of trials is tested against: the job's, or a canary group's."""

    epsilon: float = math.inf
    delta: float = 0.0


def bound_folds(kinds: np.ndarray, seed: int, cfg: AuditOptions) -> np.ndarray:
    """The held-out split of the bounds (fold 0 chooses, fold 1 tests), drawn apart from the cross-fit's."""
    return target_folds(kinds, seed + 1, cfg.select_share)


def _core(
    scores: Sequence[np.ndarray], members: np.ndarray, kinds: np.ndarray, cfg: AuditOptions, claim: Claim, seed: int
) -> tuple[dict[str, Any], RocCurve, OperatingPoint | None, int]:
    """The figures of one set of targets: bounds over all attacks, the estimate with the attack chosen inside the
    cross-fit, the rest from the attack the held-out bound chose."""
    folds = bound_folds(kinds, seed, cfg)
    found, point, chosen = bounds(scores, members, folds, cfg, claim.delta, claim.epsilon)
    own = scores[chosen]
    roc = RocCurve.from_scores(own, members)
    out: dict[str, Any] = {"n_targets": members.shape[1]}
    out.update(roc.summary(cfg.fpr_grid, cfg.recall_grid))
    out["eps_emp"] = cross_fitted_epsilon(
        scores,
        members,
        target_folds(kinds, seed),
        claim.delta,
        min_count=cfg.min_count,
        rule=cfg.crossfit_rule,
        confidence=cfg.confidence,
    )
    out["eps_emp_max"] = empirical_epsilon_curve(roc, claim.delta, cfg.min_count)
    out.update(found)
    out.update(ceiling(eps_evidence(cfg, claim.delta, claim.epsilon), members, folds, len(scores)))
    if cfg.mode == "one_run":
        out.update(one_run_best_guess(own, members, cfg))
    return out, roc, point, chosen


@dataclass(frozen=True)
class Family:
    """One family of targets the headline tests at its share of the level: every target (`name` ""), or one kind
    alone; its figures (`_core`'s), the claim it tests, and its columns of the design."""

    name: str
    figures: Mapping[str, Any]
    claim: Claim
    columns: np.ndarray


def family_level(cfg: AuditOptions, families: int) -> AuditOptions:
    """The config each of `families` families is tested at: the level split evenly (Bonferroni), so the headline,
    a violation in any family, still holds at `cfg.confidence`."""
    return cfg if families == 1 else replace(cfg, confidence=1 - (1 - cfg.confidence) / families)


def leak_power(
    cfg: AuditOptions, family: Family, members: np.ndarray, kinds: np.ndarray, seed: int, n_attacks: int
) -> LeakPower:
    """The smallest planted leak the family's test certifies (synbench.audit.power), on the design's own game and
    folds."""
    members = members[:, family.columns]
    folds = bound_folds(kinds[family.columns], seed, cfg)
    game = audit_game([members.astype(float)], members, folds, cfg.mode)
    targets = np.tile(np.arange(members.shape[1]), game.coins.shape[1] // members.shape[1])

    def evidence(scores: list[np.ndarray], coins: np.ndarray, folds: np.ndarray) -> GameResult:
        return eps_result(Game(scores, coins, folds, game.scale), cfg, family.claim.delta, family.claim.epsilon)

    return detectable_leak(
        evidence, game.coins[0], game.folds, targets, family.claim.epsilon, n_attacks, cfg.mode != "one_run", seed
    )


def verdict_figures(
    families: Sequence[Family],
    epsilon: float,
    copies: int,
    cfg: AuditOptions,
    members: np.ndarray,
    kinds: np.ndarray,
    seed: int,
    n_attacks: int,
) -> dict[str, Any]:
    """The headline over the families (every target first, then each kind alone, all tested at `cfg`, the level
    already split among them): `eps_emp_lower`, `eps_ceiling` and `eps_perfect` their largest, `p_value` the
    smallest times their number (each bound holds on the headline claim's scale: a record's eps is at most a group's),
    `verdict` and `verdict_line` (a violation in any family is one), `detectable_leak` for a consistent verdict (the
    smallest planted leak the test of every target certifies) and `n_needed` for an inconclusive one (the design
    size a perfect attack needs)."""
    bounds = [f.figures["eps_emp_lower"] for f in families]
    perfect = [f.figures["eps_perfect"] for f in families]
    found = verdict(bounds, perfect, [f.claim.epsilon for f in families])
    every = families[0]
    deciding = next(
        (f for f in families if f.figures["eps_emp_lower"] > f.claim.epsilon),
        max(families, key=lambda f: f.figures["eps_perfect"]),
    )
    needed = (
        size_needed(
            eps_evidence(cfg, every.claim.delta, every.claim.epsilon),
            eps_evidence(cfg, 0.0, every.claim.epsilon),
            every.claim.epsilon,
            cfg.mode,
            members,
            bound_folds(kinds, seed, cfg),
            cfg.select_share,
            n_attacks,
        )
        if found == "inconclusive"
        else None
    )
    power = leak_power(cfg, every, members, kinds, seed, n_attacks) if found == "consistent" else None
    claim = (
        f"nominal eps {epsilon:g}"
        if deciding.claim.epsilon == epsilon
        else f"group claim eps {deciding.claim.epsilon:g} (canaries of {copies} copies, nominal eps {epsilon:g})"
    )
    if deciding.name:
        claim += f" (the {deciding.name} alone, at 1/{len(families)} of the level)"
    unit = UNITS[cfg.mode]
    out = {
        "eps_emp_lower": max(bounds),
        "eps_emp_lower_family": next(f.name or "all" for f in families if f.figures["eps_emp_lower"] == max(bounds)),
        "eps_ceiling": max(f.figures["eps_ceiling"] for f in families),
        "eps_perfect": max(perfect),
        "p_value": min(1.0, len(families) * min(f.figures["p_value"] for f in families)),
        "p_value_floor": min(1.0, len(families) * min(f.figures["p_value_floor"] for f in families)),
        "families": len(families),
        "verdict": found,
        "verdict_line": verdict_line(
            found,
            deciding.figures["eps_emp_lower"],
            deciding.figures["eps_perfect"],
            claim,
            needed,
            unit,
            power.words() if power is not None else "",
        ),
        "n_needed": needed,
        "n_needed_unit": unit,
    }
    if power is not None:
        out |= {"detectable_leak": power.share, "detectable_leak_power": power.certified}
    return out


def summarise(
    scores: Scores,
    members: np.ndarray,
    cfg: AuditOptions,
    delta: float,
    kinds: np.ndarray | None = None,
    seed: int = 0,
    epsilon: float = math.inf,
    canary_copies: int = 1,
) -> tuple[dict[str, Any], RocCurve, OperatingPoint | None]:
    """The audit figures for (runs x targets) `scores` and `members`, the ROC and the held-out operating point.

    `scores` may map attack names to their scores; with more than one attack
    each one's figures are added as `<attack>.<key>` and the headline bounds
    combine them (module docstring). With targets of both kinds (0 outlier,
    1 canary) the core figures are repeated per kind as `outliers.<key>` and
    `canaries.<key>`. `seed` draws the target folds. `epsilon` is the nominal
    claim (per trial, at `delta`) the p-values test; a canary of
    `canary_copies` > 1 copies is a group, tested against the group claim
    (`group_claim`), and the headline figures of a set holding such groups
    test the group claim too (every trial meets it).
    """
    named = dict(scores) if isinstance(scores, Mapping) else {"": scores}
    arrays = [np.atleast_2d(np.asarray(s, dtype=float)) for s in named.values()]
    n_runs, n_targets = members.shape
    if members.all() or not members.any():
        raise SynBenchError(
            f"the audit design put all {members.size} target trials on one side of membership; "
            "raise audit.n_targets or audit.n_canaries, or change the seed"
        )
    kinds = np.zeros(n_targets, dtype=np.int8) if kinds is None else np.asarray(kinds)
    claims = {"outliers": Claim(epsilon, delta), "canaries": Claim(*group_claim(epsilon, delta, canary_copies))}
    headline = claims["canaries"] if (kinds == 1).any() else claims["outliers"]
    out: dict[str, Any] = {
        "mode": cfg.mode,
        "n_runs": n_runs,
        "n_trials": int(members.size),
        "n_member_trials": int(members.sum()),
        "delta": delta,
        "confidence": cfg.confidence,
    }
    present = [
        (code, name)
        for code, name in enumerate(KIND_NAMES)
        if 0 < (kinds == code).sum() < n_targets
        and 0 < members[:, kinds == code].sum() < members[:, kinds == code].size
    ]
    tested = family_level(cfg, 1 + len(present))
    core, roc, point, chosen = _core(arrays, members, kinds, tested, headline, seed)
    out.update(core)
    families = [Family("", core, headline, np.arange(n_targets))]
    for code, name in present:
        cols = kinds == code
        part = _core([a[:, cols] for a in arrays], members[:, cols], kinds[cols], tested, claims[name], seed)[0]
        out.update({f"{name}.{k}": part[k] for k in TYPE_KEYS})
        families.append(Family(name, part, claims[name], np.flatnonzero(cols)))
    out.update(verdict_figures(families, epsilon, canary_copies, tested, members, kinds, seed, len(arrays)))
    if len(arrays) > 1:
        out["attack_chosen"] = list(named)[chosen]
        for name, own in zip(named, arrays):
            alone = _core([own], members, kinds, cfg, headline, seed)[0]
            out.update({f"{name}.{k}": alone[k] for k in ATTACK_KEYS})
    for code, name in enumerate(KIND_NAMES):
        out[f"n_{name}"] = int((kinds == code).sum())
    return out, roc, point
