"""Poisson-sampled DP-SGD: one plan for what is calibrated, what runs and what the accountant charges.

Opacus' own path derives the rate from the loader (`1 / len(loader)`) and
runs `int(1 / rate)` steps an epoch; float rounding makes the two disagree
(for N=186, B=2 the plan 1/93 ran 92 steps and was charged 1/92). Here the
plan fixes both once: rate q = 1 / S with S = ceil(N / B) steps an epoch,
the sampler runs exactly S steps, and the loader's length is S, so Opacus'
accountant hook charges exactly q. The Poisson masks and the DP-SGD noise
come from the job's secret `NoiseSource`, never from the global torch RNG.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from torch.utils.data import DataLoader, Dataset

from synbench.errors import ConfigError
from synbench.privacy import NoiseSource


@dataclass(frozen=True)
class PoissonPlan:
    """Poisson sampling of `n` documents at an expected logical batch of `batch_size`, for `epochs` epochs."""

    n: int
    batch_size: int
    epochs: int

    def __post_init__(self) -> None:
        if self.n < 1 or self.batch_size < 1 or self.epochs < 1:
            raise ConfigError(
                f"DP-SGD needs at least one document, batch_size >= 1 and epochs >= 1 "
                f"(got N={self.n}, batch_size={self.batch_size}, epochs={self.epochs})"
            )

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(self.n / self.batch_size)

    @property
    def sample_rate(self) -> float:
        """q = 1 / steps_per_epoch, computed exactly as Opacus' `1 / len(loader)` is."""
        return 1 / self.steps_per_epoch

    @property
    def steps(self) -> int:
        return self.epochs * self.steps_per_epoch

    @property
    def expected_batch(self) -> float:
        """N q: the expected logical batch, by which the noisy sum of clipped gradients is divided."""
        return self.n * self.sample_rate


class EmptySafeCollate:
    """A collate function that maps an empty Poisson batch to `{}` (the training step fills in a null batch).

    Opacus' own wrapper builds an empty batch from the first non-empty one,
    and fails when the very first batch is empty and items are not tensors.
    """

    def __init__(self, collate: Callable[[Sequence[Any]], Any]) -> None:
        self.collate = collate

    def __call__(self, batch: Sequence[Any]) -> Any:
        return self.collate(batch) if len(batch) else {}


def poisson_loader(
    dataset: Dataset,
    plan: PoissonPlan,
    collate: Callable[[Sequence[Any]], Any],
    generator: Any,
    distributed: bool = False,
) -> DataLoader:
    """A loader of Poisson logical batches at the plan's rate, exactly `steps_per_epoch` of them an epoch."""
    from opacus.utils.uniform_sampler import DistributedUniformWithReplacementSampler, UniformWithReplacementSampler

    if distributed:
        sampler: Any = DistributedUniformWithReplacementSampler(
            total_size=plan.n, sample_rate=plan.sample_rate, steps=plan.steps_per_epoch, generator=generator
        )
    else:
        sampler = UniformWithReplacementSampler(
            num_samples=plan.n, sample_rate=plan.sample_rate, steps=plan.steps_per_epoch, generator=generator
        )
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=EmptySafeCollate(collate))


def make_private(
    module: Any,
    optimizer: Any,
    loader: DataLoader,
    plan: PoissonPlan,
    *,
    noise_multiplier: float,
    max_grad_norm: float,
    accountant: str,
    noise: NoiseSource,
    device: Any,
    grad_sample_mode: str = "hooks",
    criterion: Any = None,
    loss_scale: float = 1.0,
) -> dict[str, Any]:
    """Opacus DP-SGD over `loader` (built by `poisson_loader`): hooks, DP optimizer, accountant and, for ghost,
    criterion.

    Returns `engine`, `hooks`, `optimizer` and `criterion` (None unless
    ghost clipping). The loader is already Poisson, so Opacus is told not to
    rebuild it; the optimizer's noise comes from `noise`, and with
    `noise.secure_mode` it uses Opacus' floating-point-attack-resistant sampling.
    The hooks (`synbench.dp.hooks`) keep per-sample gradients, clipping and
    noise in fp32 under autocast, and divide out a static fp16 `loss_scale`.
    """
    from synbench.dp.hooks import DPEngine

    if len(loader) != plan.steps_per_epoch:
        raise RuntimeError(f"the loader has {len(loader)} steps an epoch, the plan {plan.steps_per_epoch}")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Secure RNG turned off")  # the secret generator is passed below
        engine = DPEngine(accountant=accountant)
    out = engine.make_private(
        module=module,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=noise_multiplier,
        max_grad_norm=max_grad_norm,
        poisson_sampling=False,
        grad_sample_mode=grad_sample_mode,
        wrap_model=False,
        criterion=criterion,
        noise_generator=noise.torch("dpsgd_noise", device),
    )
    hooks, dp_optimizer = out[0], out[1]
    hooks.forbid_grad_accumulation()  # what Opacus does for its own Poisson loaders
    hooks.loss_scale = loss_scale
    dp_optimizer.expected_batch_size = plan.expected_batch  # Opacus truncates N q to an int
    dp_optimizer.secure_mode = noise.secure_mode
    return {
        "engine": engine,
        "hooks": hooks,
        "optimizer": dp_optimizer,
        "criterion": out[2] if grad_sample_mode == "ghost" else None,
    }


def charged_history(engine: Any) -> list[tuple[float, float, int]]:
    """The (noise multiplier, sample rate, steps) entries the accountant charged."""
    return [(float(s), float(q), int(t)) for s, q, t in engine.accountant.history]
