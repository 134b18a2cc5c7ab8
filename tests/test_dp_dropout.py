"""DP-SGD refuses dropout: its masks would be per-example draws from the public seed, in batch order."""

from __future__ import annotations

import math
from typing import Any

import pytest
from torch import nn

from synbench.core.errors import ConfigError
from synbench.core.privacy import NoiseSource
from synbench.dp.module import DPSGDModule, TrainConfig, dropout_sites
from synbench.generators.dpdiffusion.data import MaskedDiffusionLoss, SequenceDataset, collate, public_tokenizer
from test_dpdiffusion import corpus, denoiser
from test_dpgen import corpus as dpgen_corpus  # noqa: F401  (a fixture, used by name)
from test_dpgen import (
    generator,
    one_thread,  # noqa: F401  (autouse: active here only when imported)
    spec,
)


class Attention(nn.Module):
    """Stands for a Hugging Face attention module, which applies `attention_dropout` functionally."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.attention_dropout = p


def config(noise_multiplier: float | None) -> TrainConfig:
    return TrainConfig(
        epochs=1,
        batch_size=2,
        physical_batch_size=2,
        lr=1e-3,
        weight_decay=0.0,
        max_grad_norm=1.0,
        warmup_steps=0,
        grad_sample_mode="hooks",
        accountant="prv",
        noise_multiplier=noise_multiplier,
        noise=NoiseSource(),
    )


def test_dropout_sites_finds_layers_and_attention_probabilities() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1), nn.Dropout(0.0), Attention(0.2), Attention(0.0))
    assert dropout_sites(model) == ["1", "3"]


@pytest.mark.parametrize("p", [0.0, 0.1])
def test_the_core_refuses_dropout_under_dp_only(p: float) -> None:
    tok = public_tokenizer()
    model = denoiser()
    model.blocks[0].ff1 = nn.Sequential(model.blocks[0].ff1, nn.Dropout(p))
    data = SequenceDataset(corpus(4), tok, 16)
    loss = MaskedDiffusionLoss(tok.mask_token_id, 16, 2, t_min=0.1, draws=1, noise=NoiseSource())
    DPSGDModule(model, data, collate, config(None), loss)  # eps=inf: dropout is allowed
    if p == 0:
        DPSGDModule(model, data, collate, config(1.0), loss)
        return
    with pytest.raises(
        ConfigError, match=r"refuses dropout: 1 module\(s\) .*blocks\.0\.ff1\.1.*generator\.lora\.dropout=0"
    ):
        DPSGDModule(model, data, collate, config(1.0), loss)


def test_dpgen_refuses_lora_dropout_at_a_finite_eps(tiny_model: dict[str, Any]) -> None:
    lora = {"r": 2, "alpha": 4, "dropout": 0.1, "target_modules": ["q_proj"]}
    with pytest.raises(ConfigError, match=r"refuses dropout: 2 module\(s\) .*lora_dropout"):  # q_proj of 2 layers
        generator(tiny_model, lora=lora).fit(dpgen_corpus(), spec(4.0), seed=0)
    report = generator(tiny_model, lora=lora, epochs=1).fit(dpgen_corpus(), spec(math.inf), seed=0)
    assert report.epsilon_spent == math.inf
