"""Min-K% probability (Shi et al. 2024) and Min-K%++ (Zhang et al. 2024) under the public model; calibration; AUC.

Min-K%: the mean of the k% lowest token log-probabilities log p(x_t | x_<t).
How many tokens "k%" of n is, is `count`: `ceil` (default) keeps
ceil(k * n), so every document keeps at least one token; `floor` keeps
int(k * n), as the Min-K%++ authors' code does (zjysteven/mink-plus-plus,
`run.py`), where a document shorter than 1/k tokens gets the mean of nothing
(NaN); here it keeps its one lowest token instead.
Min-K%++: the same mean over the standardised scores
(log p(x_t | x_<t) - mu_t) / sigma_t, where mu_t and sigma_t are the mean and
standard deviation of log p(z | x_<t) over the vocabulary z drawn from the
model's own next-token distribution. Higher means more "seen in training".
Neither needs the pretraining corpus.

Calibration: a document is flagged when its score exceeds the (1 - fpr)
quantile of the scores of a calibration set. With documents known not to be
in the model's pretraining data (`calibration=files`, e.g. written after its
data cut-off) that is a threshold with false-positive rate fpr. The demo has
no such documents, so its default `calibration=eval` uses the dataset's
held-out split (public in SynBench's release model), whose membership is as
unknown as the private set's: a flag then means "more member-like than
(1 - fpr) of comparable documents", not a membership claim. AUC is computed
only when both known members and known non-members are given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from sklearn.metrics import roc_auc_score

from synbench.lm.scoring import TokenScores, token_scores

COUNTS = ("ceil", "floor")


def kept_tokens(n: int, k: float, count: str) -> int:
    """How many of n token scores Min-K% averages: ceil(k * n), or the reference code's int(k * n); at least 1.

    `ceil` forgives the float error of k * n (0.1 * 30 is 3.0000000000000004, which is 3 tokens, not 4);
    `floor` is int(k * n) exactly as the reference computes it.
    """
    kept = math.ceil(round(k * n, 9)) if count == "ceil" else int(k * n)
    return max(1, kept)


def lowest_mean(values: np.ndarray, k: float, count: str) -> float:
    """Mean of the `kept_tokens` lowest values (NaN for an empty document)."""
    if values.size == 0:
        return float("nan")
    return float(np.sort(values)[: kept_tokens(values.size, k, count)].mean())


def min_k(scores: TokenScores, k: float, count: str) -> float:
    return lowest_mean(scores.logp, k, count)


def min_k_plus_plus(scores: TokenScores, k: float, count: str) -> float:
    return lowest_mean((scores.logp - scores.mu) / np.maximum(scores.sigma, 1e-6), k, count)


@dataclass(frozen=True)
class MinKScores:
    mink: np.ndarray
    minkpp: np.ndarray


def score_texts(
    model: Any,
    tokenizer: Any,
    texts: Sequence[str],
    *,
    k: float,
    batch_size: int,
    max_length: int,
    desc: str,
    count: str,
) -> MinKScores:
    """Both scores of every text, from one batched forward pass per batch."""
    scored = token_scores(model, tokenizer, texts, batch_size=batch_size, max_length=max_length, desc=desc)
    return MinKScores(
        np.array([min_k(s, k, count) for s in scored]), np.array([min_k_plus_plus(s, k, count) for s in scored])
    )


def threshold(calibration: np.ndarray, fpr: float) -> float:
    """The score above which a share `fpr` of the calibration documents lies (NaN scores ignored)."""
    values = calibration[np.isfinite(calibration)]
    return float(np.quantile(values, 1 - fpr)) if values.size else float("inf")


def auc(members: np.ndarray, non_members: np.ndarray) -> float | None:
    """ROC AUC of the score separating known members from known non-members; None unless both sides are known."""
    if members.size == 0 or non_members.size == 0:
        return None
    truth = np.r_[np.ones(members.size), np.zeros(non_members.size)]
    scores = np.r_[members, non_members]
    floor = np.nanmin(scores) - 1 if np.isfinite(scores).any() else 0.0  # an unscorable (empty) document ranks last
    return float(roc_auc_score(truth, np.nan_to_num(scores, nan=floor)))
