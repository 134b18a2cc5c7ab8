"""The Lightning module that fine-tunes a causal LM, with Opacus DP-SGD or without DP.

Lightning + Opacus, and why this way:

- Manual optimisation. Opacus owns the step: with Poisson sampling a logical
  batch is split into physical batches (`BatchMemoryManager`'s loader), and
  the DP optimizer clips and accumulates on every physical batch but adds noise
  and updates only at the end of the logical batch. Lightning's automatic loop
  would count, schedule and log per physical batch instead, and ghost clipping
  needs its own criterion's `backward`.
- `make_private` runs in `configure_optimizers`: Lightning calls it after the
  strategy has moved the model to its device (and, with `strategy=dpddp`,
  wrapped it in Opacus' DPDDP), and before it asks for `train_dataloader`, which
  then returns the Poisson loader Opacus built from this module's own data.
  Hooks attach without wrapping (`wrap_model=False`), so the model stays a
  plain Hugging Face model for Lightning and for sampling afterwards.
- The Trainer runs with `use_distributed_sampler=False` so Lightning never
  replaces the Poisson sampler, and the loader is handed over without a
  length so Lightning runs each epoch until the sampler is exhausted (its
  length is only an estimate under Poisson sampling, and stopping at it would
  cut a logical batch in half).
- `eps=inf` is the same pipeline (same Poisson logical batches, same physical
  split, same loss scaling) with a plain optimizer and no PrivacyEngine.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import pytorch_lightning as pl
import torch
from opacus.distributed import DifferentiallyPrivateDistributedDataParallel as DPDDP
from opacus.utils.batch_memory_manager import wrap_data_loader
from torch.utils.data import DataLoader

from synbench.dp.poisson import PoissonPlan, make_private, poisson_loader
from synbench.generators.dpgen.data import IGNORE, Collator, DocumentDataset
from synbench.privacy import NoiseSource

log = logging.getLogger(__name__)


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


def per_sample_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy, averaged over each sequence's target tokens: shape [B]."""
    shift_logits, shift_targets = logits[:, :-1].float(), targets[:, 1:]
    tokens = torch.nn.functional.cross_entropy(shift_logits.transpose(1, 2), shift_targets, ignore_index=IGNORE, reduction="none")
    return tokens.sum(dim=1) / (shift_targets != IGNORE).sum(dim=1).clamp(min=1)


class DPGenModule(pl.LightningModule):
    def __init__(self, model: torch.nn.Module, dataset: DocumentDataset, collator: Collator, cfg: TrainConfig) -> None:
        super().__init__()
        self.model = model
        self.dataset = dataset
        self.collator = collator
        self.cfg = cfg
        self.automatic_optimization = False
        self.privacy_engine: Any = None
        self.hooks: Any = None
        self.criterion: Any = None  # ghost clipping's DP loss
        self.signal: Any = None
        # Statistics of private data without noise: kept in memory for the fit report's `private_stats`,
        # never logged here (not even to the progress bar).
        self.train_loss: list[float] = []
        self.batch_sizes: list[int] = []  # documents per logical batch: varies under Poisson sampling
        self.tokens_seen = 0
        self.plan = PoissonPlan(len(dataset), cfg.batch_size, cfg.epochs)
        self._loader: Unsized | None = None
        self._chunk_losses: list[tuple[float, int]] = []

    @property
    def private(self) -> bool:
        return self.cfg.noise_multiplier is not None

    def configure_optimizers(self) -> Any:
        # Hugging Face models load in eval mode and Lightning keeps each submodule's mode; Opacus' hooks
        # only record activations in training mode (dropout, if configured, needs it too).
        self.model.train()
        params = [p for p in self.model.parameters() if p.requires_grad]
        optimizer: Any = torch.optim.AdamW(params, lr=self.cfg.lr, weight_decay=self.cfg.weight_decay)
        model = self.trainer.strategy.model
        distributed = isinstance(model, DPDDP)
        # The Poisson masks are a privacy mechanism: their randomness is the job's secret noise, as DP-SGD's is.
        loader = poisson_loader(self.dataset, self.plan, self.collator, self.cfg.noise.torch("poisson_masks"), distributed)
        if self.private:
            private = make_private(model, optimizer, loader, self.plan, noise_multiplier=self.cfg.noise_multiplier,
                                   max_grad_norm=self.cfg.max_grad_norm, accountant=self.cfg.accountant,
                                   noise=self.cfg.noise, device=self.device, grad_sample_mode=self.cfg.grad_sample_mode,
                                   criterion=torch.nn.CrossEntropyLoss(ignore_index=IGNORE))
            self.privacy_engine, self.hooks, self.criterion = private["engine"], private["hooks"], private["criterion"]
            optimizer = self.signal = private["optimizer"]
        else:
            self.signal = LogicalBatchSignal()
        self._loader = Unsized(wrap_data_loader(data_loader=loader, max_batch_size=self.cfg.physical_batch_size, optimizer=self.signal))
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
        if not batch or batch["input_ids"].shape[0] == 0:
            batch = {k: v.to(self.device) for k, v in self.collator.null_batch().items()}
        logits = self.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                            position_ids=batch["position_ids"], use_cache=False).logits
        if self.criterion is not None:  # ghost clipping: its loss object runs both backward passes
            loss = self.criterion(logits[:, :-1].flatten(0, 1), batch["labels"][:, 1:].flatten(), shape=logits[:, :-1].shape)
            losses = loss.loss_per_sample.detach()  # the same per-sequence mean as per_sample_loss
        else:
            losses = per_sample_loss(logits, batch["labels"])
            # Opacus rescales the mean's per-sample gradients, sums the clipped ones and divides by the
            # expected batch size; without DP the same normalisation is done by hand.
            loss = losses.mean() if self.private else losses.sum() / self.plan.expected_batch
        self.manual_backward(loss)
        self.tokens_seen += int(batch["attention_mask"].sum())
        opt = self.optimizers()
        self._chunk_losses.append((float(losses.detach().sum()), int((batch["labels"] != IGNORE).any(dim=1).sum())))
        if self.private:
            opt.step()
            opt.zero_grad()
            stepped = not opt.optimizer._is_last_step_skipped
        else:
            stepped = not self.signal.queue.pop(0)
            if stepped:
                opt.step()
                opt.zero_grad()
        if stepped:
            self.lr_schedulers().step()
            total, count = map(sum, zip(*self._chunk_losses))
            self.train_loss.append(total / max(count, 1))
            self.batch_sizes.append(count)
            self._chunk_losses.clear()

    def on_train_end(self) -> None:
        """Detach Opacus' hooks so the model generates as a plain model."""
        if self.hooks is not None:
            self.hooks.cleanup()
            self.hooks = None

    def steps_taken(self) -> int:
        return sum(steps for _, _, steps in self.privacy_engine.accountant.history) if self.privacy_engine else len(self.train_loss)


def fit_module(module: DPGenModule, *, accelerator: str, devices: int, strategy: Any, precision: str,
               callbacks: Sequence[pl.Callback] = ()) -> float:
    """Train `module` for its configured epochs; returns the seconds it took.

    No progress bar: its count of physical batches is a function of the
    realised Poisson batch sizes, a statistic of private data. The planned
    step count, which is public, is logged instead.
    """
    log.info("DP-SGD: %d logical steps planned (%d an epoch, sample rate %.4g)", module.plan.steps,
             module.plan.steps_per_epoch, module.plan.sample_rate)
    trainer = pl.Trainer(accelerator=accelerator, devices=devices, strategy=strategy, precision=precision,
                         max_epochs=module.cfg.epochs, use_distributed_sampler=False, logger=False,
                         enable_checkpointing=False, enable_model_summary=False, num_sanity_val_steps=0,
                         limit_val_batches=0, enable_progress_bar=False, callbacks=list(callbacks))
    start = time.perf_counter()
    trainer.fit(module)
    return time.perf_counter() - start
