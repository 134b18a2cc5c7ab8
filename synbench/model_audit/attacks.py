"""The three membership attacks on a downstream classifier: logit, LiRA and RMIA.

All three read `ModelSignals`: per example and label column, the
logit-scaled confidence on the true label, phi = log p_y - log sum_{j != y} p_j
(Carlini et al. 2022, section IV.B; for one column of a multi-label task,
log p - log(1 - p) of the label's true value). Each attack scores every
column and the scores are averaged over columns, so a multi-label task is
attacked label by label and then averaged (our choice, documented in docs/model-attacks.md).

- `logits`: phi itself (no reference models).
- `lira`: Carlini et al. 2022. Per example, Gaussians N(mu_in, s_in) and
  N(mu_out, s_out) fitted to the reference models' phi where the example was
  IN and OUT. Online: log N(phi; in) - log N(phi; out). Offline (only OUT
  models): the one-sided test log Pr[Z < phi], Z ~ N(mu_out, s_out).
  With few reference models a per-example variance rests on one or two
  values, so `global_variance` (the paper's advice for small M) uses one
  variance per side over all examples.
- `rmia`: Zarifzadeh et al. 2024. With p = sigmoid(phi) the model's
  probability of the true label, LR(x, z) = (p(x|target) / p(x)) /
  (p(z|target) / p(z)), and the score is the share of population samples z
  with LR(x, z) >= gamma. p(x) is the mean over all reference models
  (online), or ((1 + a) p_out(x) + (1 - a)) / 2 from the OUT models only
  (offline, `a` in config); p(z) the same over z's (all OUT) reference models.
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit, log_ndtr

from synbench.base import ModelAttack, ModelSignals
from synbench.errors import ConfigError

TINY = 1e-30  # floor of a probability before its log: keeps phi finite (|phi| <= 69) for saturated models


def logit_confidence(probs: np.ndarray, truth: np.ndarray, multi_label: bool) -> np.ndarray:
    """phi per example and column from predicted probabilities (n, K) and the 0/1 truth (n, K).

    Single-label: one column, log p_y - log sum_{j != y} p_j (the true class
    is the truth row's single 1). Multi-label: K columns, log p - log(1 - p)
    of each label's true value.
    """
    probs = np.clip(np.asarray(probs, dtype=float), 0.0, 1.0)
    truth = np.asarray(truth, dtype=bool)
    if multi_label:
        right = np.where(truth, probs, 1.0 - probs)
        wrong = 1.0 - right
    else:
        right = np.where(truth, probs, 0.0).sum(axis=1, keepdims=True)
        wrong = np.where(truth, 0.0, probs).sum(axis=1, keepdims=True)
    return np.log(np.maximum(right, TINY)) - np.log(np.maximum(wrong, TINY))


def _side(values: np.ndarray, mask: np.ndarray, global_variance: bool) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation per example and column of the reference values where `mask` (M, n) holds."""
    m = mask[:, :, None].astype(float)
    count = m.sum(axis=0)
    if (count == 0).any():
        raise ConfigError("LiRA needs, for every target, at least one reference model on each side it uses; "
                          "raise model_audit.n_references")
    mean = (values * m).sum(axis=0) / count
    squares = (values - mean) ** 2 * m
    if global_variance:
        dof = np.maximum(count.sum(axis=0) - count.shape[0], 1)  # one mean per example is estimated
        var = np.broadcast_to(squares.sum(axis=(0, 1)) / dof, mean.shape)
    else:
        var = squares.sum(axis=0) / np.maximum(count - 1, 1)
    return mean, np.sqrt(np.maximum(var, 1e-12))


def _log_normal(x: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    return -0.5 * ((x - mean) / std) ** 2 - np.log(std) - 0.5 * np.log(2 * np.pi)


class LogitAttack(ModelAttack):
    """The target model's logit-scaled confidence on the true label, averaged over label columns."""

    def score_models(self, signals: ModelSignals) -> np.ndarray:
        return signals.target.mean(axis=1)


class LiraAttack(ModelAttack):
    """Carlini et al. 2022: likelihood ratio of per-example Gaussians over reference-model statistics."""

    def __init__(self, online: bool = True, global_variance: bool = True) -> None:
        self.online, self.global_variance = bool(online), bool(global_variance)

    def score_models(self, signals: ModelSignals) -> np.ndarray:
        phi, refs, inc = signals.target, signals.references, np.asarray(signals.inclusion, dtype=bool)
        mu_out, s_out = _side(refs, ~inc, self.global_variance)
        if not self.online:
            return log_ndtr((phi - mu_out) / s_out).mean(axis=1)
        mu_in, s_in = _side(refs, inc, self.global_variance)
        return (_log_normal(phi, mu_in, s_in) - _log_normal(phi, mu_out, s_out)).mean(axis=1)


class RmiaAttack(ModelAttack):
    """Zarifzadeh et al. 2024: pairwise likelihood ratios against population samples, share above gamma."""

    def __init__(self, online: bool = True, a: float = 0.3, gamma: float = 1.0) -> None:
        if not 0.0 <= float(a) <= 1.0:
            raise ConfigError(f"model_attacks.rmia.a={a} must lie in [0, 1] (RMIA's offline coefficient)")
        if float(gamma) <= 0:
            raise ConfigError(f"model_attacks.rmia.gamma={gamma} must be positive")
        self.online, self.a, self.gamma = bool(online), float(a), float(gamma)

    def _marginal(self, refs: np.ndarray, inclusion: np.ndarray) -> np.ndarray:
        """p(x) per example and column from the reference models' probabilities (M, n, L)."""
        if self.online:
            return refs.mean(axis=0)
        out = ~inclusion[:, :, None]
        if (out.sum(axis=0) == 0).any():
            raise ConfigError("offline RMIA needs every example OUT of at least one reference model")
        p_out = (refs * out).sum(axis=0) / out.sum(axis=0)
        return ((1 + self.a) * p_out + (1 - self.a)) / 2

    def score_models(self, signals: ModelSignals) -> np.ndarray:
        inc = np.asarray(signals.inclusion, dtype=bool)
        ratio_x = expit(signals.target) / self._marginal(expit(signals.references), inc)  # (n, L)
        pop_refs = expit(signals.population_references)
        ratio_z = expit(signals.population_target) / self._marginal(pop_refs, np.zeros(pop_refs.shape[:2], dtype=bool))
        # share of z with ratio_x / ratio_z >= gamma, per column, by sorting z once: (n, L)
        shares = np.empty(ratio_x.shape)
        for col in range(ratio_x.shape[1]):
            sorted_z = np.sort(ratio_z[:, col])
            shares[:, col] = np.searchsorted(sorted_z, ratio_x[:, col] / self.gamma, side="right") / len(sorted_z)
        return shares.mean(axis=1)
