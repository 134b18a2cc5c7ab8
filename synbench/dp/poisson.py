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
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from synbench.core.errors import ConfigError
from synbench.core.privacy import NoiseSource


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


@dataclass(frozen=True)
class Shard:
    """The documents one DP-SGD process samples from: `rank`, `rank + world_size`, ... (all of them in one process)."""

    rank: int = 0
    world_size: int = 1


class ShardPoissonSampler:
    """Poisson logical batches over one process's shard, empty batches included, exactly `steps` of them.

    Each document of the shard is in each batch with probability q,
    independently; each document lives in exactly one shard, so across the
    processes of a DPDDP run the union of their batches is one Poisson sample
    of the whole dataset at rate q, which is what the accountant charges. In
    one process this draws exactly what Opacus' UniformWithReplacementSampler
    draws. Opacus' distributed sampler is not used: it drops empty batches,
    so the processes would take different numbers of steps.
    """

    def __init__(self, n: int, sample_rate: float, steps: int, shard: Shard, generator: Any) -> None:
        self.n, self.sample_rate, self.steps, self.shard, self.generator = n, sample_rate, steps, shard, generator

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[list[int]]:
        docs = torch.arange(self.shard.rank, self.n, self.shard.world_size)
        for _ in range(self.steps):
            yield docs[torch.rand(len(docs), generator=self.generator) < self.sample_rate].tolist()


def poisson_loader(
    dataset: Dataset,
    plan: PoissonPlan,
    collate: Callable[[Sequence[Any]], Any],
    generator: Any,
    shard: Shard | None = None,
) -> DataLoader:
    """A loader of Poisson logical batches at the plan's rate, exactly `steps_per_epoch` of them an epoch."""
    sampler = ShardPoissonSampler(plan.n, plan.sample_rate, plan.steps_per_epoch, shard or Shard(), generator)
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=EmptySafeCollate(collate))


class PhysicalBatches:
    """Each logical batch in physical batches of at most `max_batch_size`, the end of each logical batch signalled.

    What Opacus' BatchSplittingSampler does (the DP optimizer, or the non-DP
    stand-in, learns from `signal_skip_step` which physical batch ends the
    logical one), plus `agree`: in a DPDDP run it returns the largest piece
    count of any process, and every process splits its batch into that many
    pieces, empty ones (null batches) included. So the processes run the same
    number of training steps and meet in every collective together (Lightning
    broadcasts at each training step, the DP optimizer all-reduces at each
    logical step).
    """

    def __init__(
        self, logical: Any, max_batch_size: int, signal: Any, agree: Callable[[int], int] = lambda pieces: pieces
    ) -> None:
        self.logical, self.max_batch_size, self.signal, self.agree = logical, max_batch_size, signal, agree

    def __len__(self) -> int:
        return len(self.logical)  # logical batches; the physical count depends on the draws

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.logical:
            pieces = self.agree(max(1, math.ceil(len(batch) / self.max_batch_size)))
            for i, piece in enumerate(np.array_split(np.asarray(batch, dtype=np.int64), pieces)):
                self.signal.signal_skip_step(do_skip=i < pieces - 1)
                yield piece.tolist()


def physical_loader(
    loader: DataLoader, max_batch_size: int, signal: Any, agree: Callable[[int], int] = lambda pieces: pieces
) -> DataLoader:
    """`loader` (from `poisson_loader`) split into physical batches (`PhysicalBatches`)."""
    return DataLoader(
        loader.dataset,
        batch_sampler=PhysicalBatches(loader.batch_sampler, max_batch_size, signal, agree),
        collate_fn=loader.collate_fn,
    )


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
    grad_sample_mode: str,
    criterion: Any = None,
    loss_scale: float = 1.0,
    world_size: int = 1,
) -> dict[str, Any]:
    """Opacus DP-SGD over `loader` (built by `poisson_loader`): hooks, DP optimizer, accountant and, for ghost,
    criterion.

    Returns `engine`, `hooks`, `optimizer` and `criterion` (None unless
    ghost clipping). The loader is already Poisson, so Opacus is told not to
    rebuild it; the optimizer's noise comes from `noise`, and with
    `noise.secure_mode` it uses Opacus' floating-point-attack-resistant sampling.
    The hooks (`synbench.dp.hooks`) keep per-sample gradients, clipping and
    noise in fp32 under autocast, and divide out a static fp16 `loss_scale`.
    Given a DPDDP-wrapped `module` Opacus builds its distributed optimizer
    (rank 0 alone adds the noise, once for the global batch); `world_size`
    is then the number of processes.
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
    # Opacus truncates N q to an int. Under DPDDP each process divides its clipped sum (plus, on rank 0, the noise)
    # by its share N q / W and the all-reduce averages over the W processes: (sum of all + noise) / (N q) in the end.
    dp_optimizer.expected_batch_size = plan.expected_batch / world_size
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
