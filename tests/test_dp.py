"""The shared DP-SGD core: the Poisson plan is what runs and what the accountant charges, over a grid of (N, B)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from opacus.utils.batch_memory_manager import wrap_data_loader
from torch.utils.data import default_collate

from synbench.core.privacy import NoiseSource
from synbench.dp import accounting
from synbench.dp.poisson import PoissonPlan, charged_history, make_private, poisson_loader

# (186, 2) planned 93 steps, ran 92 and was charged 1/92 under Opacus' own loader; 99 and 105 fail the same way.
GRID = [(186, 2), (198, 2), (210, 2), (600, 64), (600, 1), (40, 40), (7, 3), (1, 1)]


def one_epoch(
    plan: PoissonPlan, noise_multiplier: float, accountant: str
) -> tuple[int, list[tuple[float, float, int]]]:
    """DP-SGD on a linear model over `plan.n` points for one epoch; (logical steps taken, accountant history)."""
    torch.manual_seed(0)
    data = [(torch.randn(3), torch.randn(1)) for _ in range(plan.n)]
    model = torch.nn.Linear(3, 1)
    loader = poisson_loader(data, plan, default_collate, NoiseSource().torch("poisson_masks"))
    private = make_private(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        loader,
        plan,
        noise_multiplier=noise_multiplier,
        max_grad_norm=1.0,
        accountant=accountant,
        noise=NoiseSource(),
        device="cpu",
        grad_sample_mode="hooks",
    )
    opt = private["optimizer"]
    steps = 0
    for batch in wrap_data_loader(data_loader=loader, max_batch_size=16, optimizer=opt):
        x, y, weight = (*batch, 1.0) if batch else (torch.zeros(1, 3), torch.zeros(1, 1), 0.0)  # empty: a null row
        (weight * (model(x) - y) ** 2).mean().backward()
        opt.step()
        steps += not opt._is_last_step_skipped
        opt.zero_grad()
    private["hooks"].cleanup()
    return steps, charged_history(private["engine"])


@pytest.mark.parametrize("n, batch_size", GRID)
def test_poisson_plan_runs_and_is_charged_exactly(n: int, batch_size: int) -> None:
    plan = PoissonPlan(n, batch_size, epochs=1)
    eps, delta = 4.0, 1 / max(n, 2) ** 2
    acct = "prv" if n * batch_size < 5000 else "rdp"  # PRV on long histories costs seconds per bisection step
    cal = accounting.calibrate(eps, delta, plan.sample_rate, plan.steps, acct, None)
    steps, history = one_epoch(plan, cal.noise_multiplier, acct)
    assert steps == plan.steps == plan.steps_per_epoch
    assert history == [(cal.noise_multiplier, plan.sample_rate, plan.steps)]  # the rate reported is the rate charged
    assert accounting.epsilon(history, delta, acct) <= eps


def test_plan_rate_is_one_over_the_steps_and_the_batch_is_n_q() -> None:
    plan = PoissonPlan(186, 2, epochs=3)
    assert plan.steps_per_epoch == 93 and plan.sample_rate == 1 / 93 and plan.steps == 279
    assert plan.expected_batch == pytest.approx(2.0)
    assert PoissonPlan(600, 64, 1).expected_batch == pytest.approx(60.0)  # 600 / ceil(600/64), not 64
    assert PoissonPlan(5, 9, 1).sample_rate == 1.0


def test_secure_mode_reaches_the_optimizer() -> None:
    data: Any = [(torch.randn(3), torch.randn(1)) for _ in range(10)]
    plan = PoissonPlan(10, 5, 1)
    model = torch.nn.Linear(3, 1)
    loader = poisson_loader(data, plan, default_collate, NoiseSource().torch("poisson_masks"))
    private = make_private(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        loader,
        plan,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        accountant="rdp",
        noise=NoiseSource(secure_mode=True),
        device="cpu",
        grad_sample_mode="hooks",
    )
    assert private["optimizer"].secure_mode is True and private["optimizer"].expected_batch_size == 5.0
    private["hooks"].cleanup()


def test_the_trainer_prints_no_lightning_tip_and_the_fit_no_library_noise(caplog: pytest.LogCaptureFixture) -> None:
    """Lightning logs a "Tip" advertising its cloud products when a Trainer is built; `quiet_trainer` keeps its
    rank-zero INFO lines out (warnings still pass), and `quiet_fit` ignores the two fit warnings that say nothing
    about a job while any other warning still shows."""
    import logging
    import warnings

    import pytorch_lightning as pl

    from synbench.dp.lightning import RANK_ZERO_LOGGER, quiet_fit, quiet_trainer

    options: dict[str, Any] = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False}
    caplog.set_level(logging.INFO)
    logging.getLogger(RANK_ZERO_LOGGER).setLevel(logging.NOTSET)
    pl.Trainer(**options)
    assert any("Tip" in record.getMessage() for record in caplog.records)  # what Lightning prints by itself
    caplog.clear()
    quiet_trainer(**options)
    assert not [r for r in caplog.records if r.name.startswith("pytorch_lightning") and r.levelno < logging.WARNING]
    assert logging.getLogger(RANK_ZERO_LOGGER).isEnabledFor(logging.WARNING)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet_fit():
            warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use ...", FutureWarning, stacklevel=1)
            hook = "Full backward hook is firing when gradients are computed with respect to module outputs"
            warnings.warn(hook, UserWarning, stacklevel=1)
            warnings.warn("a warning about the job itself", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["a warning about the job itself"]
