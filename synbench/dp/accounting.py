"""Privacy accounting for one DP-SGD job (DP-Gen, DP-Diffusion, ...): DP-SGD steps plus the DP label-set plan.

Both are Gaussian mechanisms, so they go into one Opacus accountant history
of `(noise_multiplier, sample_rate, steps)` entries: T steps of the
Poisson-subsampled Gaussian at rate q, and the label-set release
(`synbench.dp.label_sets`) as one or two un-subsampled steps (rate 1, L2
sensitivity 1, noise std `labels.sigma`). The whole job's epsilon is read
from that composed history, with the same accountant (PRV by default, RDP
selectable) that Opacus uses during training, at delta - delta_select: for
multi-label data, partition selection of the label sets adds delta_select
to delta, so the job's total delta is its configured one.

Budget split: `label_budget_share` s gives the label release alone the noise
that makes it (s * eps, delta)-DP; the DP-SGD noise multiplier is then the
smallest one for which the composed history meets (eps, delta). Composition
under PRV/RDP is tighter than adding epsilons, so DP-SGD gets slightly more
than (1 - s) * eps in effect.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from functools import lru_cache

from synbench.core.errors import ConfigError
from synbench.dp.label_sets import History, LabelSetBudget

DPSGD_ACCOUNTANTS = ("prv", "rdp")
# Largest noise multiplier the search tries; above it the budget is too small for the planned steps.
MAX_SIGMA = 1e4
# Wall-clock limit of one calibration. eps is capped (`synbench.core.privacy.MAX_EPSILON`), but a large eps with many
# steps still drives PRV to tiny noise multipliers, where each evaluation slows down; a job must fail, not hang.
CALIBRATION_TIME_LIMIT_S = 300.0


def check_accountant(name: str) -> str:
    """DP-SGD needs an accountant for the subsampled Gaussian: PRV (tight numerical) or RDP."""
    if name not in DPSGD_ACCOUNTANTS:
        raise ConfigError(f"accountant={name!r} cannot account DP-SGD; use accountant=prv (default) or accountant=rdp")
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


def job_history(dpsgd: History, labels: LabelSetBudget | None) -> History:
    """The accountant history of a whole job: the label-set release (if any) and the DP-SGD entries."""
    return (labels.history() if labels is not None else []) + dpsgd


def job_delta(delta: float, labels: LabelSetBudget | None) -> float:
    """The delta the accountant reads the job's epsilon at: the job's, less what label-set selection spends."""
    return delta - (labels.delta_select if labels is not None else 0.0)


@dataclass(frozen=True)
class Calibration:
    """What calibration chose, and the epsilon the accountant gives for the planned job."""

    noise_multiplier: float
    sample_rate: float
    steps: int
    planned_epsilon: float


@lru_cache(maxsize=64)  # a pure function of its numbers, and each PRV evaluation takes about a second
def calibrate(
    eps: float,
    delta: float,
    sample_rate: float,
    steps: int,
    accountant: str,
    labels: LabelSetBudget | None,
    rel_tol: float = 0.005,
) -> Calibration:
    """The smallest DP-SGD noise multiplier (within `rel_tol` of eps) whose job history meets (eps, delta).

    Bisection on sigma, as Opacus' `get_noise_multiplier` does, but over the
    composed history so the label-set release is paid for in the same ledger.
    The returned sigma is always on the safe side (planned epsilon <= eps).
    The search stops with an error after `CALIBRATION_TIME_LIMIT_S` seconds.
    """
    if not math.isfinite(eps):
        return Calibration(0.0, sample_rate, steps, math.inf)
    at_delta = job_delta(delta, labels)
    started = time.monotonic()

    def eps_at(sigma: float) -> float:
        if time.monotonic() - started > CALIBRATION_TIME_LIMIT_S:
            raise ConfigError(
                f"calibrating the DP-SGD noise for eps={eps} ({steps} steps at sample rate {sample_rate:.4g}, "
                f"accountant={accountant}) took over {CALIBRATION_TIME_LIMIT_S:g} s; use a smaller eps, fewer "
                "steps (generator.epochs) or accountant=rdp (faster)"
            )
        return epsilon(job_history([(sigma, sample_rate, steps)], labels), at_delta, accountant)

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
    return Calibration(hi, sample_rate, steps, e_hi)
