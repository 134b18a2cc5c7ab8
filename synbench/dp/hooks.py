"""Opacus' per-sample gradient hooks with the privacy arithmetic in fp32, mixed ghost clipping, and per-document
grouping.

Mixed precision (`precision=bf16-mixed`, or `16-mixed` on CUDA): Lightning
runs the training step, backward included, under `torch.autocast`, so
Opacus' hooks would compute per-sample gradients (and ghost norms) with
bf16 einsums, and clip and noise them in bf16; the bf16 sum then fails to
become the fp32 parameter's gradient. Here every hook runs with autocast
off, on activations and backprops upcast to fp32 (a no-op in fp32 training),
so per-sample gradients, their norms, clipping and noise are fp32 over the
fp32 trainable weights; only the model's forward and backward run in half
precision. With a static fp16 loss scale the backprops are unscaled here,
before any norm is taken, and an example whose backprops overflowed at a
layer contributes zero there (never more than its clipped share).

Mixed ghost clipping (Bu et al. 2022): for a Linear layer over T tokens,
ghost clipping's norm costs O(T^2) per example, the per-sample gradient
O(d_in * d_out); each layer takes the cheaper one, at every call.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from opacus import PrivacyEngine
from opacus.grad_sample.grad_sample_module import GradSampleHooks
from opacus.grad_sample.grad_sample_module_fast_gradient_clipping import GradSampleHooksFastGradientClipping
from opacus.grad_sample.linear import compute_linear_norm_sample
from torch import nn


def uses_ghost_norm(layer: nn.Linear, tokens: int) -> bool:
    """Ghost norm (T^2 per example) when cheaper than materialising the d_in x d_out per-sample gradient."""
    return tokens * tokens <= layer.in_features * layer.out_features


def mixed_linear_norm_sample(
    layer: nn.Linear, activations: Sequence[torch.Tensor], backprops: torch.Tensor
) -> dict[nn.Parameter, torch.Tensor]:
    """Per-example gradient norms of a Linear layer by whichever of ghost norm / per-sample gradient is cheaper."""
    if backprops.dim() != 3 or uses_ghost_norm(layer, backprops.shape[1]):
        return compute_linear_norm_sample(layer, list(activations), backprops)
    out: dict[nn.Parameter, torch.Tensor] = {}
    if layer.weight.requires_grad:
        out[layer.weight] = torch.einsum("nti,ntj->nij", backprops, activations[0]).flatten(1).norm(dim=1)
    if layer.bias is not None and layer.bias.requires_grad:
        out[layer.bias] = backprops.sum(dim=1).norm(dim=1)
    return out


class Fp32Hooks:
    """Mixin over Opacus' hooks: autocast off and fp32 (unscaled) activations and backprops in every hook."""

    loss_scale: float = 1.0  # the static fp16 loss scale the module multiplied the loss by

    def capture_backprops_hook(
        self, module: nn.Module, forward_input: Any, forward_output: Any, *args: Any, **kwargs: Any
    ) -> None:
        with torch.autocast(forward_output[0].device.type, enabled=False):
            super().capture_backprops_hook(module, forward_input, forward_output, *args, **kwargs)  # type: ignore[misc]

    def rearrange_grad_samples(
        self, *, module: nn.Module, backprops: torch.Tensor, loss_reduction: str, batch_first: bool
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
        backprops = backprops.float()
        if self.loss_scale != 1.0:
            backprops = backprops / self.loss_scale
            overflowed = ~torch.isfinite(backprops).flatten(1).all(dim=1)
            backprops[overflowed] = 0.0
        activations, backprops = super().rearrange_grad_samples(  # type: ignore[misc]
            module=module, backprops=backprops, loss_reduction=loss_reduction, batch_first=batch_first
        )
        return [a.float() if a.is_floating_point() else a for a in activations], backprops


class PerSampleHooks(Fp32Hooks, GradSampleHooks):
    """`grad_sample_mode=hooks`: per-sample gradients in fp32."""


class GhostHooks(Fp32Hooks, GradSampleHooksFastGradientClipping):
    """`grad_sample_mode=ghost`: per-example norms in fp32, ghost or per-sample per Linear layer (mixed ghost
    clipping)."""

    NORM_SAMPLERS = {**GradSampleHooksFastGradientClipping.NORM_SAMPLERS, nn.Linear: mixed_linear_norm_sample}

    def __init__(self, m: nn.Module, *, max_grad_norm: float, **kwargs: Any) -> None:
        """Opacus' hooks with the clip norm required (the job's dp.max_grad_norm; Opacus' own default is 1)."""
        super().__init__(m, max_grad_norm=max_grad_norm, **kwargs)


class DPEngine(PrivacyEngine):
    """Opacus' engine attaching the hooks above (always without wrapping the model)."""

    def _prepare_model(
        self,
        module: nn.Module,
        *,
        batch_first: bool = True,
        max_grad_norm: Any = 1.0,
        loss_reduction: str = "mean",
        grad_sample_mode: str = "hooks",
        wrap_model: bool = True,
    ) -> Any:
        if wrap_model or grad_sample_mode not in ("hooks", "ghost"):
            raise ValueError(
                "synbench's DP engine attaches hooks (wrap_model=False) in grad_sample_mode hooks or ghost"
            )
        self.validate(module=module, optimizer=None, data_loader=None)
        if grad_sample_mode == "ghost":
            return GhostHooks(
                module, batch_first=batch_first, loss_reduction=loss_reduction, max_grad_norm=max_grad_norm
            )
        return PerSampleHooks(module, batch_first=batch_first, loss_reduction=loss_reduction)


def group_grad_samples(params: Sequence[nn.Parameter], unit: torch.Tensor) -> None:
    """Sum the per-row gradients of rows that belong to one privacy unit (a document's chunks), before clipping.

    `unit[r]` numbers the unit of row r (0..U-1 in the physical batch); after
    this, `grad_sample` has one row per unit, so Opacus clips (and the
    accountant's sensitivity bounds) whole documents, not chunks.
    """
    n_units = int(unit.max()) + 1
    for p in params:
        gs = getattr(p, "grad_sample", None)
        if isinstance(gs, torch.Tensor):
            p.grad_sample = gs.new_zeros((n_units, *gs.shape[1:])).index_add_(0, unit.to(gs.device), gs)
