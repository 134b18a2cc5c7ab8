"""Multi-GPU DP-SGD: Lightning's DDP launcher with Opacus doing the gradient all-reduce.

Plain DDP all-reduces raw gradients during backward, before any per-sample
clipping; that would be neither private nor what Opacus expects. With
`generator.strategy=dpddp` the LightningModule is wrapped in Opacus' DPDDP
(which only broadcasts the initial weights) instead of torch's DDP. Because
`make_private` then sees a DPDDP module, Opacus switches to its distributed
Poisson sampler (each rank samples from its shard at the same rate) and to a
distributed DP optimizer that clips locally, adds noise once and all-reduces
the noised sum. The expected batch size is per rank, the accountant is
rank 0's. Needs CUDA and more than one device: not exercised by the CPU tests.
"""

from __future__ import annotations

from opacus.distributed import DifferentiallyPrivateDistributedDataParallel as DPDDP
from pytorch_lightning.strategies import DDPStrategy
from torch.nn import Module


class DPDDPStrategy(DDPStrategy):
    """`DDPStrategy` whose model wrapper is Opacus' DPDDP rather than torch's DistributedDataParallel."""

    strategy_name = "dpddp"

    def _setup_model(self, model: Module) -> Module:  # type: ignore[override]
        return DPDDP(model)

    def _register_ddp_hooks(self) -> None:
        """No DDP communication hooks: the DP optimizer does the all-reduce."""
