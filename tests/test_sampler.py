"""`synbench.lm.generation.Sampler` draws from exactly transformers' sampling distribution (temperature, then top-k,
then top-p, by transformers' own warpers), only faster; and `generate` through it is seeded and honours top_k."""

from __future__ import annotations

import pytest
import torch
from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from synbench.core.errors import ConfigError
from synbench.lm.generation import Sampler

ROWS = 40_000  # draws per case: each probability is then known to about +/- 0.005 (2.5 SE)


def transformers_probs(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """The next-token distribution of transformers' sampled generate: its warpers in its order, then softmax."""
    scores = TemperatureLogitsWarper(temperature)(None, logits.clone())
    if top_k:
        scores = TopKLogitsWarper(top_k)(None, scores)
    if top_p < 1:
        scores = TopPLogitsWarper(top_p)(None, scores)
    return scores.softmax(dim=-1)


@pytest.mark.parametrize(
    ("temperature", "top_k", "top_p"),
    [(1.0, 0, 1.0), (0.7, 0, 1.0), (0.9, 5, 1.0), (1.0, 0, 0.8), (1.4, 8, 0.6), (0.5, 1, 1.0)],
    ids=["plain", "temperature", "top-k", "top-p", "all three", "top_k=1 is greedy"],
)
def test_the_sampler_draws_from_transformers_distribution(temperature: float, top_k: int, top_p: float) -> None:
    torch.manual_seed(0)
    logits = torch.randn(1, 30) * 2
    want = transformers_probs(logits, temperature, top_k, top_p)[0]
    scores = Sampler(temperature, top_k, top_p)(None, logits.expand(ROWS, -1))  # type: ignore[arg-type]
    assert bool((scores.isfinite().sum(dim=-1) == 1).all())  # one token a row, the rest -inf: greedy picks it
    drawn = scores.argmax(dim=-1)
    got = torch.bincount(drawn, minlength=30).float() / ROWS
    assert float((got - want).abs().max()) < 0.012, (got, want)
    assert bool((got[want == 0] == 0).all())  # a token the warpers remove is never drawn


def test_the_sampler_is_seeded_by_torch() -> None:
    logits = torch.randn(64, 100)
    torch.manual_seed(3)
    first = Sampler(0.9, 50, 0.95)(None, logits).argmax(dim=-1)  # type: ignore[arg-type]
    torch.manual_seed(3)
    again = Sampler(0.9, 50, 0.95)(None, logits).argmax(dim=-1)  # type: ignore[arg-type]
    assert torch.equal(first, again)


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), [(0.0, 50, 1.0), (1.0, -1, 1.0), (1.0, 50, 0.0)])
def test_the_sampler_refuses_what_transformers_would(temperature: float, top_k: int, top_p: float) -> None:
    with pytest.raises(ConfigError, match="sampling needs temperature > 0"):
        Sampler(temperature, top_k, top_p)
