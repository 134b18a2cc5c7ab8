"""From the models' statistics to the `model_audit` section of results.json, with the audit's ROC and epsilon code.

Keys are flat, `<regime>.<attack>.<figure>` (for example `syn_dp.rmia.auc`):
AUC, TPR at each FPR of `fpr_grid`, the point estimate `eps_emp` (thresholds
with at least `min_count` errors) and the Clopper-Pearson lower bound
`eps_emp_lower` at `confidence`, over the audited model's targets (members:
the targets in its training set; non-members: the others, held out).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from synbench.audit.epsilon import empirical_epsilon_curve, empirical_epsilon_lower_bound
from synbench.audit.roc import RocCurve
from synbench.core.base import ModelAttack, ModelSignals
from synbench.model_audit.config import ModelAuditOptions


def model_signals(
    target: np.ndarray, references: Sequence[np.ndarray], inclusion: np.ndarray, n_targets: int
) -> ModelSignals:
    """Split each model's statistics (targets first, then the population samples) into `ModelSignals`."""
    refs = np.stack(references)
    return ModelSignals(
        target=target[:n_targets],
        references=refs[:, :n_targets],
        inclusion=inclusion,
        population_target=target[n_targets:],
        population_references=refs[:, n_targets:],
    )


def attack_figures(scores: np.ndarray, members: np.ndarray, audit: ModelAuditOptions, delta: float) -> dict[str, float]:
    """AUC, TPR at low FPR and empirical epsilon (point estimate and lower bound) of one attack's scores."""
    roc = RocCurve.from_scores(scores, members)
    out = roc.summary(audit.fpr_grid, ())
    out["eps_emp"] = empirical_epsilon_curve(roc, delta, audit.min_count)
    out["eps_emp_lower"] = empirical_epsilon_lower_bound(roc, delta, confidence=audit.confidence)
    return out


def summarise_regime(
    regime: str,
    signals: ModelSignals,
    members: np.ndarray,
    attacks: Mapping[str, ModelAttack],
    audit: ModelAuditOptions,
    delta: float,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The flat result keys of one regime for every attack, and each attack's scores (for the job folder only)."""
    out: dict[str, Any] = {}
    scores: dict[str, np.ndarray] = {}
    for name, attack in attacks.items():
        scores[name] = np.asarray(attack.score_models(signals), dtype=float)
        out.update({f"{regime}.{name}.{k}": v for k, v in attack_figures(scores[name], members, audit, delta).items()})
    return out, scores
