"""The shared DP-SGD training core: a Lightning module that trains any `nn.Module` on any per-sample loss.

Clients (DP-Gen's causal LM, DP-Diffusion's denoiser, a DP classifier) give
a model, a dataset, a collate function and a `PerSampleLoss`; the core does
the rest, identically for all of them:

- Manual optimisation. Opacus owns the step: with Poisson sampling a logical
  batch is split into physical batches (`synbench.dp.poisson.PhysicalBatches`), and
  the DP optimizer clips and accumulates on every physical batch but adds noise
  and updates only at the end of the logical batch. Lightning's automatic loop
  would count, schedule and log per physical batch instead, and ghost clipping
  needs its own loss object's `backward`.
- `make_private` runs in `configure_optimizers`: Lightning calls it after the
  strategy has moved the model to its device (and, with `strategy=dpddp`,
  wrapped it in Opacus' DPDDP), and before it asks for `train_dataloader`, which
  then returns the Poisson loader built from this module's own data (masks from
  the job's secret `NoiseSource`). Hooks attach without wrapping
  (`wrap_model=False`), so the model stays a plain model for sampling afterwards.
- Ghost clipping: the client's per-sample losses are wrapped in Opacus'
  `DPTensorFastGradientClipping`, whose `backward` runs both passes; so any
  loss written as a [B] tensor of per-example losses works in both modes.
- The Trainer runs with `use_distributed_sampler=False` so Lightning never
  replaces the Poisson sampler, and the loader is handed over without a
  length so Lightning runs each epoch until the sampler is exhausted (its
  length is only an estimate under Poisson sampling, and stopping at it would
  cut a logical batch in half).
- An empty Poisson batch (the first included) is replaced by the client's
  null batch, whose gradient is zero: the step still adds the calibrated
  noise and is charged, as the mechanism requires.
- `strategy=dpddp` (`synbench.dp.distributed`): the same module in spawned
  processes, each on its shard of the data; rank 0's accountant and
  statistics come back through `worker_state`.
- `eps=inf` is the same pipeline (same Poisson logical batches, same physical
  split, same loss scaling) with a plain optimizer and no PrivacyEngine.
- Mixed precision: Lightning wraps the whole training step in autocast; the
  hooks (`synbench.dp.hooks`) and the optimizer step run with it off, so
  clipping and noise are fp32 over the fp32 trainable weights. fp16 uses a
  static loss scale (`TrainConfig.loss_scale`, divided out in the hooks):
  a dynamic scaler would skip steps the accountant has charged, and its
  scale would be state computed from private data.
- A batch may carry `unit` (row -> privacy unit): rows of one unit (the
  chunks of one long document) are summed into one per-sample gradient
  before clipping, so the document, not the chunk, is what is clipped.
- No dropout under DP (`check_no_dropout`): its masks come from the global
  torch RNG, seeded by the public `seed` and drawn in batch order, so one
  document's presence would shift every later document's masks. Per-example
  draws a loss needs come from the secret noise, per document
  (`synbench.dp.document_noise`).
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterator, Mapping, Sequence

import pytorch_lightning as pl
import torch
from opacus.distributed import DifferentiallyPrivateDistributedDataParallel as DPDDP
from pytorch_lightning.plugins.precision import MixedPrecision
from torch.utils.data import DataLoader, Dataset

from synbench.core.errors import ConfigError
from synbench.core.privacy import NoiseSource
from synbench.dp.distributed import DPDDPStrategy, largest_over_ranks, sum_over_ranks
from synbench.dp.hooks import group_grad_samples
from synbench.dp.lightning import quiet_fit, quiet_trainer
from synbench.dp.poisson import PoissonPlan, Shard, make_private, physical_loader, poisson_loader

log = logging.getLogger(__name__)

Batch = Mapping[str, torch.Tensor]


@dataclass(frozen=True)
class TrainConfig:
    epochs: int
    batch_size: int  # expected logical batch size: Poisson sample rate = 1 / ceil(N / batch_size) (`PoissonPlan`)
    physical_batch_size: int
    lr: float
    weight_decay: float
    max_grad_norm: float
    warmup_steps: int
    grad_sample_mode: str  # hooks | ghost
    accountant: str
    noise_multiplier: float | None  # None: no DP
    noise: NoiseSource  # secret source of the DP-SGD noise and the Poisson masks
    loss_scale: float = 1.0  # static loss scale (fp16 mixed precision); 1 in fp32 and bf16


class PerSampleLoss(ABC):
    """What a client of the core defines: one loss per example (the privacy unit), and a null batch.

    The loss of example i must depend on example i alone (and on randomness
    that is not a privacy mechanism), so its gradient is that example's
    per-sample gradient and clipping bounds the sensitivity.
    """

    @abstractmethod
    def __call__(self, model: torch.nn.Module, batch: Batch) -> torch.Tensor:
        """Per-example losses, shape [B]."""

    @abstractmethod
    def null_batch(self) -> Batch:
        """One row with exactly zero gradient: stands in for an empty Poisson batch."""

    @abstractmethod
    def count(self, batch: Batch) -> tuple[int, int]:
        """(examples that carry loss, tokens) in `batch`: statistics of private data, kept in `private_stats` only."""


class LogicalBatchSignal:
    """Stands in for the DP optimizer's skip queue when training without DP: marks the end of each logical batch."""

    def __init__(self) -> None:
        self.queue: list[bool] = []

    def signal_skip_step(self, do_skip: bool = True) -> None:
        self.queue.append(do_skip)


class Unsized:
    """An iterable over a loader without `__len__`, so Lightning iterates until the sampler stops."""

    def __init__(self, loader: DataLoader) -> None:
        self.loader = loader

    def __iter__(self) -> Iterator[Any]:
        return iter(self.loader)


def dropout_sites(model: torch.nn.Module) -> list[str]:
    """Names of the modules of `model` that drop activations in training: dropout layers (LoRA's included) with
    p > 0, and attention modules with a positive `attention_dropout` (Hugging Face's, applied functionally)."""
    sites = []
    for name, module in model.named_modules():
        p = (
            module.p
            if isinstance(module, torch.nn.modules.dropout._DropoutNd)
            else getattr(module, "attention_dropout", 0.0)
        )
        if isinstance(p, (int, float)) and p > 0:
            sites.append(name or type(module).__name__)
    return sites


def check_no_dropout(model: torch.nn.Module) -> None:
    """Refuse DP-SGD on a model that uses dropout: its masks are per-example draws the DP bound does not cover.

    Dropout masks come from the global torch RNG (seeded by the public
    `seed`) in batch order: the masks of every later document in a batch
    depend on which documents came before, so the neighbour's per-sample
    gradients differ in many rows, not one, and the attacker knows them.
    """
    sites = dropout_sites(model)
    if sites:
        shown = ", ".join(sites[:3]) + (f" and {len(sites) - 3} more" if len(sites) > 3 else "")
        raise ConfigError(
            f"DP-SGD refuses dropout: {len(sites)} module(s) of the model drop activations in training "
            f"({shown}), with masks drawn from the public seed in batch order, so one document would shift "
            "every later document's masks; set generator.lora.dropout=0 (LoRA) and use a model whose "
            "config sets its dropout probabilities to 0, or run with eps=inf"
        )


def is_empty(batch: Any) -> bool:
    return not batch or next(iter(batch.values())).shape[0] == 0


class DPSGDModule(pl.LightningModule):
    """DP-SGD (or, with `noise_multiplier=None`, the same pipeline without DP) of `model` under `loss`."""

    def __init__(
        self,
        model: torch.nn.Module,
        dataset: Dataset,
        collate: Callable[[Sequence[Any]], Any],
        cfg: TrainConfig,
        loss: PerSampleLoss,
    ) -> None:
        super().__init__()
        self.model = model
        self.dataset = dataset
        self.collate = collate
        self.loss = loss
        self.cfg = cfg
        self.automatic_optimization = False
        self.privacy_engine: Any = None
        self.hooks: Any = None
        self.criterion: Any = None  # ghost clipping's DP loss (its module and optimizer wrap our per-sample losses)
        self.signal: Any = None
        # Statistics of private data without noise: kept in memory for the fit report's `private_stats`,
        # never logged here (not even to the progress bar).
        self.train_loss: list[float] = []
        self.batch_sizes: list[int] = []  # examples per logical batch: varies under Poisson sampling
        self.tokens_seen = 0
        self.plan = PoissonPlan(len(dataset), cfg.batch_size, cfg.epochs)  # type: ignore[arg-type]
        self._loader: Unsized | None = None
        self._chunk_losses: list[tuple[float, int]] = []
        self._epoch_start = 0.0
        self.epoch_s: list[float] = []  # seconds of each training epoch (no process start-up, no set-up)
        self.shard = Shard()  # this process's share of the data (DPDDP: set in configure_optimizers)
        if self.private:
            check_no_dropout(model)

    @property
    def private(self) -> bool:
        return self.cfg.noise_multiplier is not None

    def configure_optimizers(self) -> Any:
        # Hugging Face models load in eval mode and Lightning keeps each submodule's mode; Opacus' hooks
        # only record activations in training mode (dropout, without DP only, needs it too).
        self.model.train()
        params = [p for p in self.model.parameters() if p.requires_grad]
        optimizer: Any = torch.optim.AdamW(params, lr=self.cfg.lr, weight_decay=self.cfg.weight_decay)
        model = self.trainer.strategy.model
        distributed = isinstance(model, DPDDP)
        self.shard = Shard(self.global_rank, self.trainer.world_size) if distributed else Shard()
        # The Poisson masks are a privacy mechanism: their randomness is the job's secret noise, as DP-SGD's is;
        # each process of a DPDDP run draws its own stream (a replication seed would otherwise repeat one mask).
        masks = "poisson_masks" if self.shard.world_size == 1 else f"poisson_masks_rank{self.shard.rank}"
        loader = poisson_loader(self.dataset, self.plan, self.collate, self.cfg.noise.torch(masks), self.shard)
        if self.private:
            private = make_private(
                model,
                optimizer,
                loader,
                self.plan,
                noise_multiplier=self.cfg.noise_multiplier,
                max_grad_norm=self.cfg.max_grad_norm,
                accountant=self.cfg.accountant,
                noise=self.cfg.noise,
                device=self.device,
                grad_sample_mode=self.cfg.grad_sample_mode,
                criterion=torch.nn.CrossEntropyLoss(),  # ghost: only its module/optimizer are used
                loss_scale=self.cfg.loss_scale,
                world_size=self.shard.world_size,
            )
            self.privacy_engine, self.hooks, self.criterion = private["engine"], private["hooks"], private["criterion"]
            optimizer = self.signal = private["optimizer"]
        else:
            self.signal = LogicalBatchSignal()
        agree = partial(largest_over_ranks, device=self.device) if distributed else (lambda pieces: pieces)
        self._loader = Unsized(physical_loader(loader, self.cfg.physical_batch_size, self.signal, agree))
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, self._cosine)
        return {"optimizer": optimizer, "lr_scheduler": scheduler}

    def _cosine(self, step: int) -> float:
        """Linear warm-up, then cosine decay to 0 over the planned logical steps."""
        if step < self.cfg.warmup_steps:
            return (step + 1) / (self.cfg.warmup_steps + 1)
        progress = (step - self.cfg.warmup_steps) / max(1, self.plan.steps - self.cfg.warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    def train_dataloader(self) -> Unsized:
        if self._loader is None:
            raise RuntimeError("configure_optimizers must run before train_dataloader (Lightning's order)")
        return self._loader

    def training_step(self, batch: Any, batch_idx: int) -> None:
        if is_empty(batch):
            batch = {k: v.to(self.device) for k, v in self.loss.null_batch().items()}
        losses = self.loss(self.model, batch) * self.cfg.loss_scale
        if self.criterion is not None:  # ghost clipping: its loss object runs both backward passes
            from opacus.utils.fast_gradient_clipping_utils import DPTensorFastGradientClipping

            loss: Any = DPTensorFastGradientClipping(self.criterion.module, self.criterion.optimizer, losses, "mean")
        else:
            # Opacus rescales the mean's per-sample gradients, sums the clipped ones and divides by the
            # expected batch size; without DP the same normalisation is done by hand.
            loss = losses.mean() if self.private else losses.sum() / self.plan.expected_batch
        self.manual_backward(loss)
        if self.private and "unit" in batch:
            if self.criterion is not None:
                raise ConfigError(
                    "chunked documents (rows sharing a privacy unit) need grad_sample_mode=hooks: "
                    "ghost clipping cannot clip the sum of several rows' gradients"
                )
            group_grad_samples(self.signal.params, batch["unit"])
        examples, tokens = self.loss.count(batch)
        self.tokens_seen += tokens
        opt = self.optimizers()
        self._chunk_losses.append((float(losses.detach().sum()) / self.cfg.loss_scale, examples))
        with torch.autocast(self.device.type, enabled=False):  # clipping, noise and the update in fp32
            stepped = self._step(opt)
        if stepped:
            self.lr_schedulers().step()
            total, count = map(sum, zip(*self._chunk_losses))
            self.train_loss.append(total / max(count, 1))
            self.batch_sizes.append(count)
            self._chunk_losses.clear()

    def _step(self, opt: Any) -> bool:
        """The optimizer step at the end of a logical batch (DP: Opacus decides); True when the weights moved."""
        if self.private:
            opt.step()
            opt.zero_grad()
            return not opt.optimizer._is_last_step_skipped
        if self.signal.queue.pop(0):
            return False
        finite = True
        if self.shard.world_size > 1:  # DPDDP without DP: every process's share of the sum, as DP's all-reduce does
            params = [p for p in self.model.parameters() if p.requires_grad]
            for p in params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            sum_over_ranks([p.grad for p in params])
        if self.cfg.loss_scale != 1.0:  # the hooks unscale DP's per-sample gradients; without DP, the summed ones
            grads = [p.grad for p in self.model.parameters() if p.grad is not None]
            for g in grads:
                g.div_(self.cfg.loss_scale)
            finite = all(bool(torch.isfinite(g).all()) for g in grads)  # an fp16 overflow skips the update
        if finite:
            opt.step()
        opt.zero_grad()
        return True

    def on_train_epoch_start(self) -> None:
        self._epoch_start = time.perf_counter()

    def on_train_epoch_end(self) -> None:
        """One progress line an epoch: public counts (planned steps) and a wall-clock total, nothing per batch."""
        self.epoch_s.append(time.perf_counter() - self._epoch_start)
        log.info(
            "DP-SGD epoch %d/%d done (%d of %d steps) in %.0f s",
            self.current_epoch + 1,
            self.cfg.epochs,
            (self.current_epoch + 1) * self.plan.steps_per_epoch,
            self.plan.steps,
            self.epoch_s[-1],
        )

    def on_train_end(self) -> None:
        """Detach Opacus' hooks so the model runs as a plain model afterwards."""
        if self.hooks is not None:
            self.hooks.cleanup()
            self.hooks = None

    def worker_state(self) -> dict[str, Any]:
        """What a DPDDP run's rank 0 hands back to the job's process: the accountant's history and the statistics.

        The training processes are spawned (`synbench.dp.distributed`); the
        trained weights come back through Lightning, these through this dict.
        The loss, batch sizes and token count are rank 0's: its share of each
        logical batch (private statistics, kept in `private_stats` only).
        """
        return {
            "history": list(self.privacy_engine.accountant.history) if self.privacy_engine else None,
            "train_loss": self.train_loss,
            "batch_sizes": self.batch_sizes,
            "tokens_seen": self.tokens_seen,
            "epoch_s": self.epoch_s,
        }

    def restore_worker_state(self, state: Mapping[str, Any]) -> None:
        """The job's process takes rank 0's `worker_state`: an accountant holding exactly what rank 0 charged."""
        if state["history"] is not None:
            from synbench.dp.hooks import DPEngine

            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Secure RNG turned off")  # this engine adds no noise
                self.privacy_engine = DPEngine(accountant=self.cfg.accountant)
            self.privacy_engine.accountant.history = list(state["history"])
        self.train_loss, self.batch_sizes = list(state["train_loss"]), list(state["batch_sizes"])
        self.tokens_seen, self.epoch_s = int(state["tokens_seen"]), list(state["epoch_s"])

    def steps_taken(self) -> int:
        return (
            sum(steps for _, _, steps in self.privacy_engine.accountant.history)
            if self.privacy_engine
            else len(self.train_loss)
        )


class StaticScaleFp16(MixedPrecision):
    """fp16 autocast without Lightning's dynamic GradScaler: the module applies a static loss scale itself."""

    def __init__(self) -> None:
        super().__init__("16-mixed", "cuda")
        self.scaler = None


def precision_args(precision: str) -> dict[str, Any]:
    """Trainer keywords for `precision`: fp16 mixed precision gets the static-scale plugin (see the module
    docstring)."""
    if precision in ("16-mixed", "16"):
        return {"plugins": [StaticScaleFp16()]}
    return {"precision": precision}


def fit_module(
    module: DPSGDModule,
    *,
    accelerator: str,
    devices: int,
    strategy: Any,
    precision: str,
    callbacks: Sequence[pl.Callback] = (),
) -> float:
    """Train `module` for its configured epochs; returns the seconds it took.

    No progress bar: its count of physical batches is a function of the
    realised Poisson batch sizes, a statistic of private data. The planned
    step count, which is public, is logged instead, and a line per epoch.
    """
    log.info(
        "DP-SGD: %d logical steps planned (%d an epoch, sample rate %.4g)",
        module.plan.steps,
        module.plan.steps_per_epoch,
        module.plan.sample_rate,
    )
    fitter = quiet_trainer(
        accelerator=accelerator,
        devices=devices,
        strategy=strategy,
        **precision_args(precision),
        max_epochs=module.cfg.epochs,
        use_distributed_sampler=False,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
        enable_progress_bar=False,
        callbacks=list(callbacks),
    )
    device = next(module.model.parameters()).device
    spawned = isinstance(strategy, DPDDPStrategy)
    if spawned:  # each spawned process moves its copy to its own device; no GPU memory is shared across processes
        module.model.to("cpu")
    start = time.perf_counter()
    with quiet_fit():
        fitter.fit(module)
    seconds = time.perf_counter() - start
    if spawned:
        module.model.to(device)
    return seconds
