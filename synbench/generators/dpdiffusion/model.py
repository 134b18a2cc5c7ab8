"""The denoisers of DP-Diffusion: bidirectional Transformers over MiniLM's public WordPiece vocabulary.

`init: pretrained` (`PretrainedDenoiser`, the default): the first
`pretrained_layers` encoder layers of all-MiniLM-L6-v2 (offline, from its pip
package), the top `trained_layers` of them fine-tuned and the rest (with the
embeddings) frozen and run without gradient, so DP-SGD back-propagates
through, and computes per-sample gradients of, the trained layers only. The
output head is TIED to the frozen input word embeddings (as DiffusionBERT
starts from BERT) and computed only at the positions asked for (the masked
ones in training, the revealed ones in sampling). The label set enters by a
direct path at every position: its code through a `Linear`, added to every
position's input of the first trained layer, and through a second `Linear`
to every position's final hidden state, which the tied head turns into a
label-to-vocabulary output bias in the span of the word embeddings (384
numbers a label, not 30522: few enough for DP-SGD's noise). The logits also
carry a fixed public Zipf prior over the vocabulary (`zipf_prior`). A frozen weight
needs no per-sample gradient, and every trained layer sees the batch
dimension, so Opacus' `hooks` and `ghost` modes both apply.

`init: scratch` (`Denoiser`): a small Transformer trained from random
weights, built only from layers Opacus computes per-sample gradients for, in both
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
from typing import Any

import torch
from torch import nn

from synbench.core.errors import ConfigError
from synbench.generators.dpdiffusion.settings import DPDiffusionOptions


@dataclass(frozen=True)
class DenoiserConfig:
    vocab_size: int
    n_labels: int
    max_len: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int

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
    """p(x_0 | x_t, labels) from random weights (`init: scratch`): a small pre-LayerNorm Transformer, untied head."""

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

    def describe(self) -> str:
        return self.cfg.describe()

    def forward(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        labels: torch.Tensor,
        where: torch.Tensor,
        block_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """input_ids, position_ids, where, block_ids: [B, T]; labels: [B, n_labels] multi-hot. Returns the logits
        [M, V] of the M positions where `where` is true (row-major order).

        The head is trained, so in training it runs on [B, T, d] (Opacus needs the batch dimension of its input
        for a per-sample gradient); without gradient it runs only at `where`.
        """
        hidden = self.features(input_ids, position_ids, labels, block_ids)
        return self.head(hidden)[where] if torch.is_grad_enabled() else self.head(hidden[where])

    def features(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        labels: torch.Tensor,
        block_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The final hidden states [B, T, d]."""
        x = self.tokens(input_ids) + self.positions(position_ids)
        x = x + (position_ids == 0).unsqueeze(-1).to(x.dtype) * self.label_code(labels).unsqueeze(1)
        mask = None if block_ids is None else same_block(block_ids)
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x)


def same_block(block_ids: torch.Tensor) -> torch.Tensor:
    """The attention mask [B, 1, T, T] (True: may attend) that keeps each noise draw within its own block."""
    return (block_ids.unsqueeze(2) == block_ids.unsqueeze(1)).unsqueeze(1)


def zipf_prior(tokenizer: Any) -> torch.Tensor:
    """Log-probabilities [V] of a public Zipf prior: the WordPiece vocabulary lists its words by frequency from "the"
    on, so the token of rank r there gets weight 1/r; the characters, special tokens and [unused*] slots before it
    get the weight of rank id("the")."""
    first = tokenizer.get_vocab()["the"]
    rank = (torch.arange(len(tokenizer), dtype=torch.float32) - first).clamp(min=0) + 1
    rank[:first] = first
    return torch.log_softmax(-torch.log(rank), dim=0)


class PretrainedDenoiser(nn.Module):
    """p(x_0 | x_t, labels) from MiniLM's bottom encoder layers, top ones trained, tied head (module docstring)."""

    def __init__(
        self, encoder: Any, tokenizer: Any, n_labels: int, max_len: int, layers: int, trained: int, label_gain: float
    ) -> None:
        super().__init__()
        available = len(encoder.encoder.layer)
        if not 1 <= trained <= layers <= available:
            raise ConfigError(
                f"generator.trained_layers={trained} and generator.pretrained_layers={layers} must satisfy "
                f"1 <= trained_layers <= pretrained_layers <= {available} (the encoder's layers)"
            )
        if max_len > encoder.config.max_position_embeddings:
            raise ConfigError(
                f"generator.max_seq_len={max_len} exceeds the encoder's {encoder.config.max_position_embeddings} "
                "positions"
            )
        d = encoder.config.hidden_size
        self.name = f"minilm-l6-v2-L{layers}of{available}-train{trained}-d{d}-T{max_len}-V{len(tokenizer)}-tied"
        self.embeddings = encoder.embeddings.requires_grad_(False)
        self.frozen = nn.ModuleList(encoder.encoder.layer[: layers - trained]).requires_grad_(False)
        self.trained = nn.ModuleList(encoder.encoder.layer[layers - trained : layers])
        # the direct label path, at every position: the code in (first trained layer's input) and out (final hidden
        # state: through the tied head a label-to-vocabulary output bias in the span of the word embeddings)
        self.label_in = nn.Linear(n_labels, d, bias=False)
        self.label_out = nn.Linear(n_labels, d, bias=False)
        nn.init.zeros_(self.label_in.weight)
        nn.init.zeros_(self.label_out.weight)
        self.label_gain = label_gain  # a fixed multiplier on both: under Adam, label_gain x the learning rate there
        self.register_buffer("prior", zipf_prior(tokenizer))  # public and frozen

    def describe(self) -> str:
        """The architecture in one public string, e.g. `minilm-l6-v2-L3of6-train3-d384-T32-V30522-tied`."""
        return self.name

    def forward(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        labels: torch.Tensor,
        where: torch.Tensor,
        block_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """As `Denoiser.forward`: the logits [M, V] at the positions where `where` is true."""
        mask = None
        if block_ids is not None:
            mask = torch.zeros(same_block(block_ids).shape, dtype=torch.float32, device=input_ids.device)
            mask.masked_fill_(~same_block(block_ids), torch.finfo(torch.float32).min)
        with torch.no_grad():  # the frozen bottom: no activation is kept for a backward pass
            x = self.embeddings(input_ids=input_ids, position_ids=position_ids)
            for layer in self.frozen:
                x = layer(x, mask)
        x = x + self.label_gain * self.label_in(labels).unsqueeze(1)
        for layer in self.trained:
            x = layer(x, mask)
        x = x + self.label_gain * self.label_out(labels).unsqueeze(1)
        return nn.functional.linear(x[where], self.embeddings.word_embeddings.weight) + self.prior


def pretrained_denoiser(tokenizer: Any, n_labels: int, settings: DPDiffusionOptions) -> PretrainedDenoiser:
    """`PretrainedDenoiser` over all-MiniLM-L6-v2 from its pip package (offline), dropout off (DP-SGD refuses it),
    shaped by DP-Diffusion's options (`max_seq_len`, `pretrained_layers`, `trained_layers`, `label_gain`)."""
    from transformers import BertModel

    from synbench.generators.dpdiffusion.data import public_model_path

    encoder = BertModel.from_pretrained(
        public_model_path(), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, add_pooling_layer=False
    )
    s = settings
    return PretrainedDenoiser(
        encoder, tokenizer, n_labels, s.max_seq_len, s.pretrained_layers, s.trained_layers, s.label_gain
    )


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
