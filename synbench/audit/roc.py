"""The ROC of a membership attack, kept as counts rather than rates.

Every figure the audit reports (AUC, TPR at a fixed FPR, precision at low
recall, empirical epsilon and its confidence bound) is a function of the
true- and false-positive counts at each threshold, so `RocCurve` stores those
counts once; the confidence bounds need counts, not rates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RocCurve:
    """True/false positives of the rule "member iff score >= threshold", one row per distinct threshold.

    Row 0 is the threshold +inf (nothing flagged) and the last row flags
    everything, so `tp` and `fp` run from 0 to `n_pos` and `n_neg`. Tied
    scores share one threshold: a rule cannot split a tie.
    """

    thresholds: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    n_pos: int
    n_neg: int

    @classmethod
    def from_scores(cls, scores: np.ndarray, members: np.ndarray) -> "RocCurve":
        """The curve of `scores` (larger means member) against the 0/1 truth `members`."""
        scores = np.asarray(scores, dtype=float).ravel()
        members = np.asarray(members, dtype=bool).ravel()
        if scores.shape != members.shape:
            raise ValueError(f"{scores.size} scores but {members.size} membership labels")
        if not np.all(np.isfinite(scores)):
            raise ValueError("attack scores must be finite")
        n_pos = int(members.sum())
        if n_pos == 0 or n_pos == members.size:
            raise ValueError("an ROC needs both members and non-members")
        order = np.argsort(-scores, kind="stable")
        ranked, truth = scores[order], members[order]
        last_of_tie = np.append(ranked[1:] != ranked[:-1], True)
        tp = np.cumsum(truth)[last_of_tie]
        fp = np.cumsum(~truth)[last_of_tie]
        return cls(
            thresholds=np.concatenate([[np.inf], ranked[last_of_tie]]),
            tp=np.concatenate([[0], tp]),
            fp=np.concatenate([[0], fp]),
            n_pos=n_pos,
            n_neg=int(members.size - n_pos),
        )

    @property
    def tpr(self) -> np.ndarray:
        return self.tp / self.n_pos

    @property
    def fpr(self) -> np.ndarray:
        return self.fp / self.n_neg

    def auc(self) -> float:
        """Area under the curve; a tie counts one half, as in the Mann-Whitney statistic."""
        tpr, fpr = self.tpr, self.fpr
        return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))

    def tpr_at_fpr(self, fpr: float) -> float:
        """The best TPR among thresholds whose FPR is at most `fpr` (no interpolation between thresholds)."""
        return float(self.tpr[self.fpr <= fpr].max())

    def precision_at_recall(self, recall: float) -> float:
        """The best precision among thresholds that recall at least `recall` of the members."""
        flagged = self.tp + self.fp
        ok = (self.tpr >= recall) & (flagged > 0)
        return float((self.tp[ok] / flagged[ok]).max())

    def summary(self, fpr_grid: tuple[float, ...], recall_grid: tuple[float, ...]) -> dict[str, float]:
        """The audit's attack figures as flat `results.json` keys."""
        out = {"auc": self.auc()}
        out.update({f"tpr_at_fpr_{f:g}": self.tpr_at_fpr(f) for f in fpr_grid})
        out.update({f"precision_at_recall_{r:g}": self.precision_at_recall(r) for r in recall_grid})
        return out
