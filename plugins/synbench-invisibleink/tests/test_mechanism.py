"""DClip bounds the sensitivity as the paper states; top-k+ is public; eps=inf is plain sampling."""

from __future__ import annotations

import math

import pytest
import torch
from synbench_invisibleink.mechanism import dclip_scores, outside_top_k, sample_tokens, token_distribution, topk_plus

VOCAB, B = 200, 5


def logits(rows: int, seed: int, scale: float = 4.0) -> torch.Tensor:
    return torch.randn(rows, VOCAB, generator=torch.Generator().manual_seed(seed)) * scale


@pytest.mark.parametrize("clip", [0.1, 0.8, 3.0])
def test_replacing_one_reference_by_the_empty_one_moves_every_score_by_at_most_c_over_b(clip: float) -> None:
    """The paper's sensitivity: |score(R) - score(R')|_inf <= C/B, and so the token's log-probabilities move by
    <= 2C/(B tau)."""
    public, owner = logits(1, 0), torch.zeros(B, dtype=torch.long)
    for trial in range(8):
        private = logits(B, 100 + trial, scale=10.0)  # far from the public logits: clipping is active
        full = dclip_scores(private, public, owner, clip, B)
        for i in range(B):
            keep = [j for j in range(B) if j != i]
            fewer = dclip_scores(private[keep], public, owner[keep], clip, B)  # reference i replaced by the empty one
            gap = (full - fewer).abs().max().item()
            assert gap <= clip / B + 1e-6
            for tau in (0.5, 1.0):
                p, _ = token_distribution(private, public, owner, clip=clip, batch_size=B, temperature=tau, top_k=0)
                q, _ = token_distribution(
                    private[keep], public, owner[keep], clip=clip, batch_size=B, temperature=tau, top_k=0
                )
                assert (p.log() - q.log()).abs().max().item() <= 2 * clip / (B * tau) + 1e-5
    # the bound is tight: one reference far above the public logits moves its scores by exactly C/B
    private = public.repeat(B, 1)
    private[0] += 100.0
    gap = dclip_scores(private, public, owner, clip, B) - dclip_scores(private[1:], public, owner[1:], clip, B)
    assert gap.max().item() == pytest.approx(clip / B, abs=1e-5)


@pytest.mark.parametrize("rows", [B - 2, B, 2 * B])
def test_adding_one_reference_to_a_batch_of_any_size_moves_every_score_by_at_most_c_over_b(rows: int) -> None:
    """Hashed batching: a batch holds about B references, possibly more; the sum over B still moves by <= C/B."""
    public, clip = logits(1, 1), 0.7
    private = logits(rows + 1, 7, scale=10.0)
    owner = torch.zeros(rows + 1, dtype=torch.long)
    gap = dclip_scores(private, public, owner, clip, B) - dclip_scores(private[:-1], public, owner[:-1], clip, B)
    assert gap.abs().max().item() <= clip / B + 1e-6


def test_unclipped_logits_would_not_be_bounded() -> None:
    """Without clipping (C = inf) one reference moves the scores arbitrarily far: the clip is what bounds them."""
    public, owner = logits(1, 0), torch.zeros(B, dtype=torch.long)
    private = public.repeat(B, 1)
    private[0, 3] += 1e4
    gap = dclip_scores(private, public, owner, math.inf, B) - dclip_scores(private[1:], public, owner[1:], math.inf, B)
    assert gap.max().item() == pytest.approx(1e4 / B, rel=1e-4)


def test_top_k_plus_is_the_public_top_k_widened_by_2c_over_b_and_reads_no_private_logit() -> None:
    """The authors' set: public logit >= k-th public logit - 2C/B. Each score lies within C of its public logit, so
    every private top-k token lies within 2C of the k-th public logit (the wider bound the set would need to hold
    all of them); the set is public either way, so its width changes utility, never privacy."""
    clip, k = 0.7, 10
    public, owner = logits(1, 1), torch.zeros(B, dtype=torch.long)
    mask = topk_plus(public, k, clip, B)
    kth = public.topk(k).values[0, -1]
    assert torch.equal(mask[0], public[0] >= kth - 2 * clip / B)
    assert mask[0, public.topk(k).indices[0]].all() and k <= int(mask.sum()) < VOCAB
    for trial in range(50):
        scores = dclip_scores(logits(B, 500 + trial, scale=10.0), public, owner, clip, B)
        assert (public[0, scores.topk(k).indices[0]] >= kth - 2 * clip - 1e-5).all()
    p1, m1 = token_distribution(logits(B, 7), public, owner, clip=clip, batch_size=B, temperature=1.0, top_k=k)
    p2, m2 = token_distribution(logits(B, 8), public, owner, clip=clip, batch_size=B, temperature=1.0, top_k=k)
    assert torch.equal(m1, m2) and torch.equal(m1, mask) and (p1[~m1] == 0).all() and not torch.equal(p1, p2)


def test_eps_inf_is_sampling_from_the_private_contexts() -> None:
    """C = inf: the whole vocabulary, and softmax of the mean of the B private logits (one context: its own softmax)."""
    public, owner = logits(1, 2), torch.zeros(B, dtype=torch.long)
    private = logits(B, 3)
    probs, mask = token_distribution(private, public, owner, clip=math.inf, batch_size=B, temperature=0.7, top_k=10)
    assert mask.all()
    assert torch.allclose(probs, torch.softmax(private.mean(0, keepdim=True) / 0.7, dim=-1), atol=1e-6)
    one, _ = token_distribution(private[:1], public, owner[:1], clip=math.inf, batch_size=1, temperature=1.0, top_k=0)
    assert torch.allclose(one, torch.softmax(private[:1], dim=-1), atol=1e-6)
    draws = torch.stack([sample_tokens(one, torch.Generator().manual_seed(s)) for s in range(1000)]).flatten()
    freq = torch.bincount(draws, minlength=VOCAB).float() / len(draws)
    assert (freq - one[0]).abs().max().item() < 0.05


def test_several_documents_in_one_call_do_not_mix() -> None:
    """Two documents with 2 and 0 private rows: each scored from its own rows only."""
    public, private = logits(2, 4), logits(2, 5)
    owner = torch.tensor([0, 0])
    scores = dclip_scores(private, public, owner, 0.5, B)
    assert torch.equal(scores[1], public[1])
    assert torch.allclose(scores[0], public[0] + (private - public[0]).clamp(-0.5, 0.5).sum(0) / B)
    tokens = public.argmax(-1)
    assert not outside_top_k(public, tokens, 3).any()
    assert outside_top_k(public, public.argmin(-1), 3).all()
