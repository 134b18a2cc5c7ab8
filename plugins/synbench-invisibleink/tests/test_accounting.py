"""The accountant against the authors' `invink` 0.1.0 (`invink.utils.get_clip` / `get_epsilon` / `cdp_rho`).

The reference numbers were computed with invink 0.1.0's own functions
(`pip download invink==0.1.0`; its batch_size counts the public prompt, so
it is B + 1 here). The first rows are the paper's experiment grid
(InvisibleInk-Experiments/scripts/invink.sh: T=500, tau=1.1-1.2, batch 8-32,
delta=1e-6).
"""

from __future__ import annotations

import math

import pytest
from synbench_invisibleink import accounting

# (eps, T, tau, invink batch_size = B + 1, delta) -> invink's clip C and rho
INVINK = [
    ((10.0, 500, 1.2, 8, 1e-6), 0.65912521, 1.53927876),
    ((5.0, 500, 1.1, 8, 1e-6), 0.33139175, 0.46306499),
    ((1.0, 200, 1.2, 16, 1e-6), 0.28091519, 0.02435597),
    ((3.0, 500, 1.0, 32, 1e-5), 0.92844698, 0.22424917),
    ((4.0, 48, 1.0, 8, 2.8e-6), 0.82843716, 0.33615092),
]


@pytest.mark.parametrize(("setting", "clip", "rho"), INVINK)
def test_reproduces_invinks_calibration_within_one_percent(setting: tuple, clip: float, rho: float) -> None:
    eps, tokens, tau, invink_batch, delta = setting
    ours_rho = accounting.zcdp_rho(eps, delta)
    assert ours_rho == pytest.approx(rho, rel=0.01)
    assert accounting.clip_for(ours_rho, tokens, invink_batch - 1, tau) == pytest.approx(clip, rel=0.01)
    # and back: invink's clip spends eps over the T tokens of one document
    assert accounting.document_epsilon(tokens, clip, invink_batch - 1, tau, delta) == pytest.approx(eps, rel=0.01)


def test_invinks_epsilon_of_a_fixed_clip() -> None:
    """invink.utils.get_epsilon(300, 0.7, 8, 1.0, 1e-6) = 9.848229 (rho = 300 * 0.7^2 / (2 * 7^2))."""
    assert accounting.document_epsilon(300, 0.7, 7, 1.0, 1e-6) == pytest.approx(9.848229, rel=0.01)
    assert accounting.token_rho(0.7, 7, 1.0) * 300 == pytest.approx(1.5, rel=1e-12)


def test_conversion_is_tighter_than_the_classic_bound_and_never_overspends() -> None:
    for rho in (1e-3, 0.05, 0.3, 2.0):
        for delta in (1e-9, 1e-5, 1e-2):
            eps = accounting.zcdp_epsilon(rho, delta)
            assert 0 < eps <= rho + 2 * math.sqrt(rho * math.log(1 / delta))
            assert accounting.zcdp_delta(rho, eps) <= delta * (1 + 1e-6)
            back = accounting.zcdp_rho(eps, delta)
            assert back == pytest.approx(rho, rel=1e-6) and accounting.zcdp_delta(back, eps) <= delta


def test_passes_and_gaussians_compose_additively() -> None:
    rho = accounting.zcdp_rho(4.0, 1e-5)
    clip = accounting.clip_for(rho, 48, 7, 1.0, passes=3)
    assert 3 * 48 * accounting.token_rho(clip, 7, 1.0) == pytest.approx(rho, rel=1e-12)
    assert accounting.gaussian_rho(2.0, 2) == pytest.approx(0.25)
    assert math.isinf(accounting.clip_for(math.inf, 48, 7, 1.0)) and math.isinf(accounting.zcdp_epsilon(math.inf, 1e-5))
