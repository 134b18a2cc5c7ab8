"""The denoiser of DP-Diffusion: a small bidirectional Transformer over a public WordPiece vocabulary.

Built only from layers Opacus computes per-sample gradients for, in both
`hooks` and `ghost` mode: `Embedding` (tokens, positions), `Linear` (the
label-set code, attention projections, MLP, output head) and `LayerNorm`;
attention is our own (projections plus parameter-free scaled dot-product).
No weight is shared (the output head is not tied to the token embedding),
and every input carries the batch dimension (position ids are [B, T]).

Position 0 of every sequence holds the label-set code: the multi-hot vector
of the document's labels through a `Linear` (one-hot for single-label data),
added to that position's embedding. It is never masked, so the model is
conditioned on it at every step. A sequence may hold several independent
noise draws of one document side by side (`block_ids`): attention then stays
within each draw's block, and the batch dimension stays the document.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class DenoiserConfig:
    vocab_size: int
    n_labels: int
    max_len: int
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 512

    def describe(self) -> str:
        """The architecture in one public string, e.g. `d128-L2-H4-ff512-T64-V30522`."""
        return f"d{self.d_model}-L{self.n_layers}-H{self.n_heads}-ff{self.d_ff}-T{self.max_len}-V{self.vocab_size}"


class SelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be a multiple of n_heads={n_heads}")
        self.n_heads = n_heads
        self.q, self.k, self.v, self.o = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        b, t, d = x.shape
        heads = [p(x).view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for p in (self.q, self.k, self.v)]
        out = nn.functional.scaled_dot_product_attention(*heads, attn_mask=mask)
        return self.o(out.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    """Pre-LayerNorm Transformer block (bidirectional)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_heads)
        self.ff1, self.ff2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), mask)
        return x + self.ff2(nn.functional.gelu(self.ff1(self.ln2(x))))


class Denoiser(nn.Module):
    """p(x_0 | x_t, labels): logits over the vocabulary at every position."""

    def __init__(self, cfg: DenoiserConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tokens = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.positions = nn.Embedding(cfg.max_len, cfg.d_model)
        self.label_code = nn.Linear(cfg.n_labels, cfg.d_model, bias=False)
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.n_heads, cfg.d_ff) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)  # untied: ghost clipping cannot clip a shared weight
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        labels: torch.Tensor,
        block_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """input_ids, position_ids, block_ids: [B, T]; labels: [B, n_labels] multi-hot. Returns logits [B, T, V]."""
        return self.head(self.features(input_ids, position_ids, labels, block_ids))

    def features(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        labels: torch.Tensor,
        block_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The final hidden states [B, T, d] (the sampler applies `head` only where it reveals a token)."""
        x = self.tokens(input_ids) + self.positions(position_ids)
        x = x + (position_ids == 0).unsqueeze(-1).to(x.dtype) * self.label_code(labels).unsqueeze(1)
        mask = None if block_ids is None else (block_ids.unsqueeze(2) == block_ids.unsqueeze(1)).unsqueeze(1)
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
