"""Repeated audits and a block bootstrap: how much an audit's figures move between independent runs.

`audit.repeats = R` runs R complete audits (each with its own design, canaries
and generator randomness); `repeat_summary` reports the mean and a
t-interval for the mean of each headline figure over them. Each repeat's
`eps_emp_lower` is a valid bound on its own; their mean is not a bound, it
says how stable the audit is.

In `one_run` mode the R audits are also pooled into one game
(`pooled_summary`, reported as `pooled.<key>`): see `pool_games` for why
the Steinke et al. bound holds for the pool.

In `k_subsets` mode the pooled ROC treats run x target trials as
independent, but the trials of one run share a synthetic corpus and the two
runs of a pair share a base. `block_bootstrap` resamples whole pairs of runs
(the blocks) and, for comparison, single trials: a block interval much wider
than the trial interval says the pooling overstates the evidence.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
from scipy.stats import t as student_t

from synbench.audit.config import AuditOptions
from synbench.audit.roc import RocCurve
from synbench.audit.summary import summarise

REPEATED = ("auc", "eps_emp", "eps_emp_lower", "eps_emp_lower_holdout", "eps_emp_lower_bonferroni", "gdp_mu_lower")


def mean_interval(values: Sequence[float], confidence: float) -> tuple[float, float, float]:
    """(mean, low, high): the t-interval for the mean of `values` at `confidence` (needs at least 2 values)."""
    v = np.asarray(values, dtype=float)
    mean = float(v.mean())
    half = float(student_t.ppf(0.5 + confidence / 2, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
    return mean, mean - half, mean + half


def repeat_summary(summaries: Sequence[Mapping[str, Any]], confidence: float) -> dict[str, float]:
    """`<key>_mean`, `<key>_ci_low`, `<key>_ci_high` over the repeats for the headline keys and every TPR at FPR."""
    keys = [k for k in summaries[0] if k in REPEATED or k.startswith("tpr_at_fpr_")]
    out: dict[str, float] = {"repeats": len(summaries)}
    for key in keys:
        mean, low, high = mean_interval([float(s[key]) for s in summaries], confidence)
        out.update({f"{key}_mean": mean, f"{key}_ci_low": low, f"{key}_ci_high": high})
    return out


def _auc(scores: np.ndarray, members: np.ndarray) -> float:
    return RocCurve.from_scores(scores, members).auc() if 0 < members.sum() < members.size else float("nan")


def block_bootstrap(
    scores: np.ndarray, members: np.ndarray, block: int, samples: int, seed: int, confidence: float
) -> dict[str, float]:
    """Percentile intervals of the AUC from resampling blocks of `block` consecutive runs, and single trials."""
    rng = np.random.default_rng([seed, 0xB007])
    n_blocks = len(scores) // block
    blocks = np.arange(n_blocks * block).reshape(n_blocks, block)
    by_block = [
        _auc(scores[rows], members[rows])
        for rows in (blocks[rng.integers(0, n_blocks, n_blocks)].ravel() for _ in range(samples))
    ]
    flat_s, flat_m = scores.ravel(), members.ravel()
    by_trial = [
        _auc(flat_s[idx], flat_m[idx]) for idx in (rng.integers(0, flat_s.size, flat_s.size) for _ in range(samples))
    ]
    q = [(1 - confidence) / 2, (1 + confidence) / 2]
    block_lo, block_hi = np.nanquantile(by_block, q)
    trial_lo, trial_hi = np.nanquantile(by_trial, q)
    return {
        "auc_block_ci_low": float(block_lo),
        "auc_block_ci_high": float(block_hi),
        "auc_trial_ci_low": float(trial_lo),
        "auc_trial_ci_high": float(trial_hi),
        "block_to_trial_width": float((block_hi - block_lo) / max(trial_hi - trial_lo, 1e-12)),
    }


NOT_POOLED = ("mode", "delta", "confidence")  # the job's settings, reported once at the top


def pool_games(
    scores: Sequence[Mapping[str, np.ndarray]], members: Sequence[np.ndarray], kinds: Sequence[np.ndarray]
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """R one-run games as one game over all their target trials: (scores by attack, members, kinds), each 1 x sum T_r.

    Why the one-run analysis of Steinke, Nasr & Jagielski (2023) holds for
    the pool: their theorem needs only that, for every target trial, the
    whole output the guesses are computed from is eps-DP in that trial's
    inclusion coin given every other coin. Here the output is the tuple of
    R synthetic corpora, produced by R independent generator runs. Trial
    (r, i)'s coin decides only whether target i is in run r's private set;
    run r is an (eps, delta)-DP function of that set, and the other runs
    neither read that coin nor share randomness with run r, so given all
    other coins the tuple is (eps, delta)-DP in coin (r, i). Ranking
    scores across runs is post-processing of the tuple and of public data
    (targets, references), so the guesses may use any trial's score. The
    pool is then one game of m = sum T_r trials tested once, with the same
    binomial (and 2 m delta) bound; the same target text in two runs is
    two trials with independent coins, which the theorem allows.
    """
    names = list(scores[0])
    pooled = {name: np.concatenate([np.ravel(s[name]) for s in scores])[None] for name in names}
    return pooled, np.concatenate([np.ravel(m) for m in members])[None].astype(bool), np.concatenate(list(kinds))


def pooled_summary(
    scores: Sequence[Mapping[str, np.ndarray]],
    members: Sequence[np.ndarray],
    kinds: Sequence[np.ndarray],
    run_bounds: Sequence[float],
    cfg: AuditOptions,
    delta: float,
    seed: int,
    epsilon: float = math.inf,
) -> dict[str, Any]:
    """The pooled one-run game's figures as `pooled.<key>`, and each run's own bound (`run_bounds`) as
    `eps_emp_lower_run_<r>`; its p-values test the nominal `epsilon` (canary groups their group claim)."""
    pooled, pooled_members, pooled_kinds = pool_games(scores, members, kinds)
    out, _, _ = summarise(pooled, pooled_members, cfg, delta, pooled_kinds, seed, epsilon, cfg.canary_repeats)
    figures: dict[str, Any] = {f"pooled.{k}": v for k, v in out.items() if k not in NOT_POOLED}
    figures.update({f"eps_emp_lower_run_{r}": float(bound) for r, bound in enumerate(run_bounds)})
    return figures
