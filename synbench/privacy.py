"""Privacy budgets and Gaussian-mechanism calibration.

`PrivacySpec` is the budget a job asks for. The Gaussian helpers use the
mu-GDP view (Dong, Roth & Su 2019): T Gaussian mechanisms of L2 sensitivity 1
and noise std sigma compose to mu-GDP with mu = sqrt(T) / sigma, and mu-GDP
implies (eps, delta(eps))-DP for every eps with
delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).
This is exact for Gaussian mechanisms (it is the analytic Gaussian mechanism
of Balle & Wang 2018), so calibrating through it wastes no budget.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

from synbench.corpus import Corpus
from synbench.errors import ConfigError

ACCOUNTANTS = ("prv", "rdp", "gdp")


@dataclass(frozen=True)
class PrivacySpec:
    """A requested (epsilon, delta) budget; `epsilon = inf` means no DP.

    `delta=None` lets the generator apply its documented default for the
    private set size (for example 1/N^2 for DP-Gen); see `delta_or`.
    """

    epsilon: float
    delta: float | None = None
    accountant: str = "prv"

    def __post_init__(self) -> None:
        eps = _as_float(self.epsilon, "eps")
        if math.isnan(eps) or eps <= 0:
            raise ConfigError(f"eps={self.epsilon} is invalid: use a positive number, or eps=inf for no DP")
        object.__setattr__(self, "epsilon", eps)
        if self.delta is not None:
            delta = _as_float(self.delta, "delta")
            if not 0.0 < delta < 1.0:
                raise ConfigError(f"delta={self.delta} is invalid: it must lie strictly between 0 and 1 (or be null for the generator's default)")
            object.__setattr__(self, "delta", delta)
        if self.accountant not in ACCOUNTANTS:
            raise ConfigError(f"accountant={self.accountant!r} is unknown; choose one of {', '.join(ACCOUNTANTS)}")

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.epsilon)

    def delta_or(self, default: float) -> float:
        """The configured delta, or `default` (a generator's rule for N) when unset."""
        return float(self.delta) if self.delta is not None else float(default)


def _as_float(value: object, key: str) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"{key}={value!r} is not a number") from None


def gdp_delta(epsilon: float, mu: float) -> float:
    """delta(eps) of a mu-GDP mechanism."""
    if mu <= 0 or epsilon == math.inf:
        return 0.0
    a = -epsilon / mu + mu / 2
    b = -epsilon / mu - mu / 2
    return float(ndtr(a) - math.exp(epsilon + log_ndtr(b)))


def gdp_mu(epsilon: float, delta: float) -> float:
    """The largest mu such that mu-GDP implies (epsilon, delta)-DP."""
    if not math.isfinite(epsilon):
        return math.inf
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta={delta} must lie in (0, 1)")
    hi = 1.0
    while gdp_delta(epsilon, hi) < delta:
        hi *= 2.0
    mu = float(brentq(lambda m: gdp_delta(epsilon, m) - delta, 1e-9, hi, xtol=1e-12))
    while gdp_delta(epsilon, mu) > delta:  # the root finder may land a hair above: never overspend
        mu *= 1 - 1e-12
    return mu


def gdp_epsilon(mu: float, delta: float) -> float:
    """The smallest epsilon for which mu-GDP implies (epsilon, delta)-DP."""
    if not math.isfinite(mu):
        return math.inf
    if gdp_delta(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while gdp_delta(hi, mu) > delta:
        hi *= 2.0
    return float(brentq(lambda eps: gdp_delta(eps, mu) - delta, 0.0, hi, xtol=1e-12))


def gaussian_sigma(epsilon: float, delta: float, compositions: int = 1) -> float:
    """Noise std for `compositions` Gaussian mechanisms of L2 sensitivity 1 to meet (epsilon, delta) together."""
    if compositions < 1:
        raise ValueError(f"compositions={compositions} must be at least 1")
    if not math.isfinite(epsilon):
        return 0.0
    return math.sqrt(compositions) / gdp_mu(epsilon, delta)


def noisy_label_histogram(corpus: Corpus, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Per-label document counts over the public `label_space`, with Gaussian noise.

    Each document's label indicator row is scaled to unit L2 norm, so adding or
    removing one document changes the histogram by at most 1 in L2: one Gaussian
    mechanism of sensitivity 1. Returns non-negative weights (not rounded).
    """
    rows = corpus.label_matrix().astype(float)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    counts = (rows / np.maximum(norms, 1.0)).sum(axis=0)
    noisy = counts + rng.normal(0.0, sigma, size=counts.shape) if sigma > 0 else counts
    return np.clip(noisy, 0.0, None)


def allocate(n: int, weights: np.ndarray) -> np.ndarray:
    """Split n items over categories in proportion to `weights` (largest remainder); uniform if all are 0."""
    w = np.asarray(weights, dtype=float)
    if w.size == 0 or not np.all(np.isfinite(w)):
        raise ValueError("allocate needs a non-empty vector of finite weights")
    w = np.full_like(w, 1.0) if w.sum() <= 0 else w
    share = n * w / w.sum()
    base = np.floor(share).astype(int)
    rest = n - int(base.sum())
    base[np.argsort(-(share - base), kind="stable")[:rest]] += 1
    return base
