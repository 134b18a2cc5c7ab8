"""DP-SGD across processes (`generator.strategy=dpddp`): Lightning's DDP, spawned, with Opacus doing the all-reduce.

Plain DDP all-reduces raw gradients during backward, before any per-sample
clipping; that would be neither private nor what Opacus expects. Here the
LightningModule is wrapped in Opacus' DPDDP (which only broadcasts the
initial weights), so `make_private` builds Opacus' distributed DP optimizer:
each process clips its own examples, rank 0 alone adds the noise (once, for
the global batch) and the all-reduce sums and averages. What else makes the
run equal to the one-process job (tests/test_dpddp.py holds each):

- Sampling: each process draws a Poisson batch from its own shard of the
  documents at the job's rate q, from its own secret stream
  (`synbench.dp.poisson.ShardPoissonSampler`), so the union is one Poisson
  batch of the whole set and the accountant's (q, steps) describe it.
- Scale: each process divides by its share N q / W of the expected batch;
  after the averaging all-reduce the update is (sum of clipped + noise) / N q.
- Lock-step: every process splits each logical batch into the same number of
  physical batches (`largest_over_ranks`), so all take the same training steps.
- The job runs once: the processes are spawned for `trainer.fit` only (gloo
  on CPU, NCCL on GPU, on one machine), and rank 0 hands back the trained
  weights (through Lightning) and its accountant and statistics
  (`DPSGDModule.worker_state`). Data loading, the label release, sampling and
  the results happen once, in the job's own process, under any Hydra launcher.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from lightning_fabric.plugins.environments import LightningEnvironment
from opacus.distributed import DifferentiallyPrivateDistributedDataParallel as DPDDP
from pytorch_lightning.strategies import DDPStrategy
from pytorch_lightning.strategies.launchers.multiprocessing import _MultiProcessingLauncher
from torch.nn import Module


def largest_over_ranks(value: int, device: Any = "cpu") -> int:
    """The largest `value` any process holds (an all-reduce; NCCL needs the tensor on the process's GPU)."""
    tensor = torch.tensor([value], device=device)
    torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.MAX)
    return int(tensor.item())


def sum_over_ranks(tensors: Sequence[torch.Tensor]) -> None:
    """Each tensor replaced, in place, by its sum over the processes."""
    for tensor in tensors:
        torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.SUM)


class DPStateLauncher(_MultiProcessingLauncher):
    """Lightning's spawning launcher, also carrying rank 0's `worker_state()` back to the job's process."""

    def get_extra_results(self, trainer: Any) -> dict[str, Any]:
        extra = super().get_extra_results(trainer)
        state = getattr(trainer.lightning_module, "worker_state", None)
        extra["dp_worker_state"] = state() if state is not None else None
        return extra

    def update_main_process_results(self, trainer: Any, extra: dict[str, Any]) -> None:
        super().update_main_process_results(trainer, extra)
        if extra.get("dp_worker_state") is not None:
            trainer.lightning_module.restore_worker_state(extra["dp_worker_state"])


class DPDDPStrategy(DDPStrategy):
    """`DDPStrategy` on one machine: spawned processes, Opacus' DPDDP rather than torch's DistributedDataParallel.

    The local cluster environment is explicit, so under SLURM (one task with
    several GPUs) Lightning spawns the processes itself instead of waiting
    for SLURM tasks.
    """

    strategy_name = "dpddp"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(start_method="spawn", cluster_environment=LightningEnvironment(), **kwargs)

    def _configure_launcher(self) -> None:
        self._launcher = DPStateLauncher(self, start_method=self._start_method)

    def _setup_model(self, model: Module) -> Module:  # type: ignore[override]
        return DPDDP(model)

    def _register_ddp_hooks(self) -> None:
        """No DDP communication hooks: the DP optimizer does the all-reduce."""
