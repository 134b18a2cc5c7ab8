"""InvisibleInk's privacy accounting: zCDP per token, composed over a document, converted to (eps, delta).

The paper (Vinod, Pillutla & Thakurta, NeurIPS 2025, arXiv 2507.02974) and
the authors' `invink` package account one generated token as the exponential
mechanism at temperature tau over scores whose private part is the mean of B
difference-clipped logits. Replacing one reference of the batch by the empty
reference (its context becomes the public prompt, whose clipped difference is
0) moves every score by at most C/B, so the scores of neighbours differ inside
an interval of width 2C/B: the mechanism is (2C/(B tau))-bounded range, which
is rho_tok = (2C/(B tau))^2 / 8 = C^2 / (2 B^2 tau^2) zCDP (Cesar & Rogers
2021). A document of T tokens composes T of them (rho = T rho_tok); documents
written from disjoint batches of references compose in parallel, so a
reference that serves in `passes` batches costs passes * T * rho_tok. zCDP
converts to (eps, delta) with the bound of Canonne, Kamath & Steinke (2020,
Prop. 12 / Cor. 13), the one `invink` uses:
delta(eps) = min_{alpha > 1} exp((alpha - 1)(alpha rho - eps)) / (alpha - 1) * (1 - 1/alpha)^alpha.
A Gaussian mechanism of L2 sensitivity 1 and std sigma is 1/(2 sigma^2)-zCDP,
so the DP label histogram joins the same ledger.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq


def token_rho(clip: float, batch_size: int, temperature: float) -> float:
    """zCDP of one token: C^2 / (2 B^2 tau^2) (inf for C = inf, i.e. no DP)."""
    if batch_size < 1 or temperature <= 0 or clip < 0:
        raise ValueError(f"need batch_size >= 1, temperature > 0, clip >= 0 (got {batch_size}, {temperature}, {clip})")
    return 0.5 * (clip / (batch_size * temperature)) ** 2


def gaussian_rho(sigma: float, mechanisms: int = 1) -> float:
    """zCDP of `mechanisms` Gaussian mechanisms of L2 sensitivity 1 and noise std sigma (inf without noise)."""
    return math.inf if sigma <= 0 else mechanisms / (2.0 * sigma**2)


def _log_delta_at(alpha: float, rho: float, eps: float) -> float:
    return (alpha - 1.0) * (alpha * rho - eps) + alpha * math.log1p(-1.0 / alpha) - math.log(alpha - 1.0)


def zcdp_delta(rho: float, eps: float) -> float:
    """The smallest delta for which rho-zCDP implies (eps, delta)-DP, by the Canonne-Kamath-Steinke bound."""
    if rho < 0 or eps < 0:
        raise ValueError("rho and eps must be non-negative")
    if rho == 0:
        return 0.0
    if math.isinf(rho):
        return 1.0
    # The exponent's derivative in alpha, (2 alpha - 1) rho - eps + log(1 - 1/alpha), increases: one root.
    slope = lambda a: (2.0 * a - 1.0) * rho - eps + math.log1p(-1.0 / a)  # noqa: E731
    lo, hi = 1.0 + 1e-12, max(2.0, (eps + 1.0) / (2.0 * rho) + 2.0)
    alpha = (
        brentq(slope, lo, hi, xtol=1e-14, rtol=1e-14) if slope(lo) < 0 < slope(hi) else (lo if slope(lo) >= 0 else hi)
    )
    return min(1.0, math.exp(_log_delta_at(alpha, rho, eps)))


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The smallest eps for which rho-zCDP implies (eps, delta)-DP (inf for rho = inf)."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta={delta} must lie in (0, 1)")
    if math.isinf(rho):
        return math.inf
    if rho == 0 or zcdp_delta(rho, 0.0) <= delta:
        return 0.0
    hi = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta)) + 1.0  # the classic bound, always above the answer
    return float(brentq(lambda e: zcdp_delta(rho, e) - delta, 0.0, hi, xtol=1e-13, rtol=1e-13))


def zcdp_rho(eps: float, delta: float) -> float:
    """The largest rho whose zCDP implies (eps, delta)-DP: the budget a job of (eps, delta) may spend."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta={delta} must lie in (0, 1)")
    if math.isinf(eps):
        return math.inf
    hi = 1.0
    while zcdp_delta(hi, eps) <= delta:
        hi *= 2.0
    rho = float(brentq(lambda r: zcdp_delta(r, eps) - delta, 1e-300, hi, xtol=1e-15, rtol=1e-13))
    while zcdp_delta(rho, eps) > delta:  # the root finder may land a hair above: never overspend
        rho *= 1 - 1e-12
    return rho


def clip_for(rho: float, tokens: int, batch_size: int, temperature: float, passes: int = 1) -> float:
    """The clip norm C at which `passes` x `tokens` tokens spend exactly `rho` (invink's `get_clip`, solved for C)."""
    if tokens < 1 or passes < 1:
        raise ValueError("tokens and passes must be at least 1")
    if math.isinf(rho):
        return math.inf
    return temperature * batch_size * math.sqrt(2.0 * rho / (tokens * passes))


def document_epsilon(
    tokens: int, clip: float, batch_size: int, temperature: float, delta: float, passes: int = 1
) -> float:
    """(eps at delta) of `passes` x `tokens` tokens at clip C: invink's `get_epsilon` (its batch_size is our B + 1)."""
    return zcdp_epsilon(passes * tokens * token_rho(clip, batch_size, temperature), delta)
