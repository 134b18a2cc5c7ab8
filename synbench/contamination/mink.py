"""Min-K% probability (Shi et al. 2024) and Min-K%++ (Zhang et al. 2024) under the public model; calibration; AUC.

Min-K%: the mean of the k% lowest token log-probabilities log p(x_t | x_<t).
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

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from sklearn.metrics import roc_auc_score

from synbench.lm.scoring import TokenScores, token_scores


def lowest_mean(values: np.ndarray, k: float) -> float:
    """Mean of the ceil(k * n) lowest values (NaN for an empty document)."""
    if values.size == 0:
        return float("nan")
    count = max(1, int(np.ceil(k * values.size)))
    return float(np.sort(values)[:count].mean())


def min_k(scores: TokenScores, k: float) -> float:
    return lowest_mean(scores.logp, k)


def min_k_plus_plus(scores: TokenScores, k: float) -> float:
    return lowest_mean((scores.logp - scores.mu) / np.maximum(scores.sigma, 1e-6), k)


@dataclass(frozen=True)
class MinKScores:
    mink: np.ndarray
    minkpp: np.ndarray


def score_texts(model: Any, tokenizer: Any, texts: Sequence[str], *, k: float, batch_size: int, max_length: int,
                desc: str) -> MinKScores:
    """Both scores of every text, from one batched forward pass per batch."""
    scored = token_scores(model, tokenizer, texts, batch_size=batch_size, max_length=max_length, desc=desc)
    return MinKScores(np.array([min_k(s, k) for s in scored]), np.array([min_k_plus_plus(s, k) for s in scored]))


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
