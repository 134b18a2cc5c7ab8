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
  models), `offline_test`: `one_sided` (default; the paper's test, eq. 4)
  log Pr[Z < phi], Z ~ N(mu_out, s_out), or `two_sided`, the authors' code's
  -log N(phi; mu_out, s_out) (large when phi is far from the OUT Gaussian on
  either side). The location is the `center` of the reference values
  (`mean`, default, or `median` as the authors' code does); the spread is
  their standard deviation about the mean with `ddof` (1, default, the
  unbiased variance; 0 as the authors' code). With few reference models a
  per-example variance rests on one or two values, so `global_variance`
  (the paper's advice for small M) pools the deviations about each example's
  mean into one variance per side.
- `rmia`: Zarifzadeh et al. 2024. With p = sigmoid(phi) the model's
  probability of the true label, LR(x, z) = (p(x|target) / p(x)) /
  (p(z|target) / p(z)), and the score is the share of population samples z
  with LR(x, z) >= gamma. p(x) is the mean over all reference models
  (online), or ((1 + a) p_out(x) + (1 - a)) / 2 from the OUT models only
  (offline, `a` in config); p(z) the same over z's reference models (all
  OUT): all M of them (`z_reference: all`, default), or the M/2 with the
  largest p(z) (`top_half`), which is what ML Privacy Meter's `run_rmia`
  computes (it keeps the top M/2 OUT signals per sample, and every model is
  OUT for z).

Which reference code each setting reproduces, and the tests that check it on
fixed inputs, are in docs/model-attacks.md.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_ndtr

from synbench.core.base import ModelAttack, ModelSignals
from synbench.core.errors import ConfigError

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


LIRA_CENTERS = ("mean", "median")
LIRA_OFFLINE_TESTS = ("one_sided", "two_sided")
RMIA_Z_REFERENCES = ("all", "top_half")


def _choice(value: str, allowed: tuple[str, ...], key: str) -> str:
    if value not in allowed:
        raise ConfigError(f"model_attacks.{key}={value!r} is unknown; choose one of {', '.join(allowed)}")
    return value


def _side(
    values: np.ndarray, mask: np.ndarray, global_variance: bool, center: str = "mean", ddof: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Location (`center`) and standard deviation (about the mean, with `ddof`) per example and column of the
    reference values (M, n, L) where `mask` (M, n) holds."""
    m = mask[:, :, None].astype(float)
    count = m.sum(axis=0)
    if (count == 0).any():
        raise ConfigError(
            "LiRA needs, for every target, at least one reference model on each side it uses; "
            "raise model_audit.n_references"
        )
    mean = (values * m).sum(axis=0) / count
    squares = (values - mean) ** 2 * m
    if global_variance:
        dof = np.maximum(count.sum(axis=0) - ddof * count.shape[0], 1)  # ddof per example whose mean is estimated
        var = np.broadcast_to(squares.sum(axis=(0, 1)) / dof, mean.shape)
    else:
        var = squares.sum(axis=0) / np.maximum(count - ddof, 1)
    location = np.nanmedian(np.where(m > 0, values, np.nan), axis=0) if center == "median" else mean
    return location, np.sqrt(np.maximum(var, 1e-12))


def _log_normal(x: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    return -0.5 * ((x - mean) / std) ** 2 - np.log(std) - 0.5 * np.log(2 * np.pi)


class LogitAttack(ModelAttack):
    """The target model's logit-scaled confidence on the true label, averaged over label columns."""

    def score_models(self, signals: ModelSignals) -> np.ndarray:
        return signals.target.mean(axis=1)


class LiraAttack(ModelAttack):
    """Carlini et al. 2022: likelihood ratio of per-example Gaussians over reference-model statistics."""

    def __init__(
        self,
        online: bool = True,
        global_variance: bool = True,
        center: str = "mean",
        ddof: int = 1,
        offline_test: str = "one_sided",
    ) -> None:
        if ddof not in (0, 1) or isinstance(ddof, bool):
            raise ConfigError(
                f"model_attacks.lira.ddof={ddof!r} must be 0 (the authors' code) or 1 (unbiased variance)"
            )
        self.online, self.global_variance, self.ddof = bool(online), bool(global_variance), int(ddof)
        self.center = _choice(center, LIRA_CENTERS, "lira.center")
        self.offline_test = _choice(offline_test, LIRA_OFFLINE_TESTS, "lira.offline_test")

    def score_models(self, signals: ModelSignals) -> np.ndarray:
        phi, refs, inc = signals.target, signals.references, np.asarray(signals.inclusion, dtype=bool)
        mu_out, s_out = _side(refs, ~inc, self.global_variance, self.center, self.ddof)
        if not self.online:
            if self.offline_test == "two_sided":
                return -_log_normal(phi, mu_out, s_out).mean(axis=1)
            return log_ndtr((phi - mu_out) / s_out).mean(axis=1)
        mu_in, s_in = _side(refs, inc, self.global_variance, self.center, self.ddof)
        return (_log_normal(phi, mu_in, s_in) - _log_normal(phi, mu_out, s_out)).mean(axis=1)


class RmiaAttack(ModelAttack):
    """Zarifzadeh et al. 2024: pairwise likelihood ratios against population samples, share above gamma."""

    def __init__(self, online: bool = True, a: float = 0.3, gamma: float = 1.0, z_reference: str = "all") -> None:
        if not 0.0 <= float(a) <= 1.0:
            raise ConfigError(f"model_attacks.rmia.a={a} must lie in [0, 1] (RMIA's offline coefficient)")
        if float(gamma) <= 0:
            raise ConfigError(f"model_attacks.rmia.gamma={gamma} must be positive")
        self.online, self.a, self.gamma = bool(online), float(a), float(gamma)
        self.z_reference = _choice(z_reference, RMIA_Z_REFERENCES, "rmia.z_reference")

    def _marginal(self, refs: np.ndarray, inclusion: np.ndarray) -> np.ndarray:
        """p(x) per example and column from the reference models' probabilities (M, n, L)."""
        if self.online:
            return refs.mean(axis=0)
        out = ~inclusion[:, :, None]
        if (out.sum(axis=0) == 0).any():
            raise ConfigError("offline RMIA needs every example OUT of at least one reference model")
        p_out = (refs * out).sum(axis=0) / out.sum(axis=0)
        return ((1 + self.a) * p_out + (1 - self.a)) / 2

    def _population_marginal(self, refs: np.ndarray) -> np.ndarray:
        """p(z) per population sample and column: from all reference models (every one is OUT for z), or from
        the M/2 (at least 1) with the largest p(z)."""
        if self.z_reference == "top_half":
            refs = -np.sort(-refs, axis=0)[: max(refs.shape[0] // 2, 1)]
        return self._marginal(refs, np.zeros(refs.shape[:2], dtype=bool))

    def score_models(self, signals: ModelSignals) -> np.ndarray:
        inc = np.asarray(signals.inclusion, dtype=bool)
        ratio_x = expit(signals.target) / self._marginal(expit(signals.references), inc)  # (n, L)
        ratio_z = expit(signals.population_target) / self._population_marginal(expit(signals.population_references))
        # share of z with ratio_x / ratio_z >= gamma, per column, by sorting z once: (n, L)
        shares = np.empty(ratio_x.shape)
        for col in range(ratio_x.shape[1]):
            sorted_z = np.sort(ratio_z[:, col])
            shares[:, col] = np.searchsorted(sorted_z, ratio_x[:, col] / self.gamma, side="right") / len(sorted_z)
        return shares.mean(axis=1)
