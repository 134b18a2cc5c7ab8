"""Privacy accounting for one DP-Gen job: DP-SGD steps plus the noisy label histogram.

Both are Gaussian mechanisms, so they go into one Opacus accountant history
of `(noise_multiplier, sample_rate, steps)` entries: T steps of the
Poisson-subsampled Gaussian at rate q, and the label histogram as one
un-subsampled step (rate 1, L2 sensitivity 1, noise std `label_sigma`).
The whole job's epsilon is read from that composed history, with the same
accountant (PRV by default, RDP selectable) that Opacus uses during training.

Budget split: `label_budget_share` s gives the histogram alone the noise
that makes it (s * eps, delta)-DP (analytic Gaussian mechanism); the DP-SGD
noise multiplier is then the smallest one for which the composed history
meets (eps, delta). Composition under PRV/RDP is tighter than adding
epsilons, so DP-SGD gets slightly more than (1 - s) * eps in effect.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import lru_cache

from synbench.errors import ConfigError
from synbench.privacy import gaussian_sigma

DPSGD_ACCOUNTANTS = ("prv", "rdp")
History = list[tuple[float, float, int]]
# Largest noise multiplier the search tries; above it the budget is too small for the planned steps.
MAX_SIGMA = 1e4


def check_accountant(name: str) -> str:
    """DP-SGD needs an accountant for the subsampled Gaussian: PRV (tight numerical) or RDP."""
    if name not in DPSGD_ACCOUNTANTS:
        raise ConfigError(
            f"accountant={name!r} cannot account DP-SGD in generator 'dpgen'; use accountant=prv (default) or accountant=rdp"
        )
    return name


def epsilon(history: History, delta: float, accountant: str) -> float:
    """Epsilon of a composed history under Opacus' `accountant` (PRV returns its upper bound)."""
    from opacus.accountants import create_accountant

    if not history:
        return 0.0
    acct = create_accountant(mechanism=check_accountant(accountant))
    acct.history = list(history)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PRV warns about its own numerical tolerances
        return float(acct.get_epsilon(delta=delta))


def label_sigma(eps: float, delta: float, share: float) -> float:
    """Noise std of the label histogram that spends the share `share` of eps (0 means no histogram)."""
    if not 0.0 <= share < 1.0:
        raise ConfigError(f"generator.label_budget_share={share} must lie in [0, 1)")
    return gaussian_sigma(share * eps, delta) if share > 0 else 0.0


def label_history(label_noise: float) -> History:
    """The label histogram as one Gaussian step at sample rate 1 (nothing when there is no histogram)."""
    return [(label_noise, 1.0, 1)] if label_noise > 0 else []


def job_history(sigma: float, sample_rate: float, steps: int, label_noise: float) -> History:
    """The accountant history of a whole job: the label histogram (if any) and the DP-SGD steps."""
    return label_history(label_noise) + [(sigma, sample_rate, steps)]


@dataclass(frozen=True)
class Calibration:
    """What calibration chose, and the epsilon the accountant gives for the planned job."""

    noise_multiplier: float
    label_sigma: float
    sample_rate: float
    steps: int
    planned_epsilon: float


@lru_cache(maxsize=64)  # a pure function of its numbers, and each PRV evaluation takes about a second
def calibrate(eps: float, delta: float, sample_rate: float, steps: int, accountant: str,
              label_share: float, rel_tol: float = 0.005) -> Calibration:
    """The smallest DP-SGD noise multiplier (within `rel_tol` of eps) whose job history meets (eps, delta).

    Bisection on sigma, as Opacus' `get_noise_multiplier` does, but over the
    composed history so the label histogram is paid for in the same ledger.
    The returned sigma is always on the safe side (planned epsilon <= eps).
    """
    if not math.isfinite(eps):
        return Calibration(0.0, 0.0, sample_rate, steps, math.inf)
    lab = label_sigma(eps, delta, label_share)

    def eps_at(sigma: float) -> float:
        return epsilon(job_history(sigma, sample_rate, steps, lab), delta, accountant)

    lo, hi = 0.0, 1.0
    while (e_hi := eps_at(hi)) > eps:
        lo, hi = hi, 2 * hi
        if hi > MAX_SIGMA:
            raise ConfigError(
                f"eps={eps} cannot be met with {steps} DP-SGD steps at sample rate {sample_rate:.4g}: "
                "lower generator.epochs, raise eps, or lower generator.label_budget_share"
            )
    while eps - e_hi > rel_tol * eps and hi - lo > 1e-4:
        mid = (lo + hi) / 2
        e_mid = eps_at(mid)
        if e_mid <= eps:
            hi, e_hi = mid, e_mid
        else:
            lo = mid
    return Calibration(hi, lab, sample_rate, steps, e_hi)
