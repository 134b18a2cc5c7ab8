"""One InvisibleInk token: DClip, the top-k+ set, and the exponential mechanism, for many documents at once.

For a document with public logits p (the LM given the public prompt and the
text so far) and private logits l_1..l_b (the same, with one private
reference each in the prompt; b <= B under sequential batching, the missing
B - b references empty, i.e. public, adding nothing; under hashed batching b
varies around B and may exceed it, and the denominator stays B):

- DClip: score = p + (1/B) sum_i clip(l_i - p, -C, C). Only the difference
  from the public logits is clipped, so the public prior (grammar, the label
  prompt) passes unclipped and the private part of every score lies in
  [-C, C] * b/B; replacing one reference by the empty one, or adding or
  removing one, moves each score by at most C/B (`accounting` turns that
  into zCDP).
- Top-k+: the candidates are the tokens whose public logit is at least the
  k-th largest public logit minus 2C/B, the expansion of the authors'
  experiment code (InvisibleInk-Experiments' generate.py passes its batch
  less the public prompt, B, to `get_topk`). Their package `invink` 0.1.0
  passes its batch_size, which counts the public prompt, so it widens by
  2C/(B+1); we use 2C/B. The set is a function of public logits only, so it
  costs nothing; its width trades diversity for quality. (Each score lies
  within C of its public logit, so a widening of 2C would hold every
  possible private top-k token; 2C/B is the authors' choice.)
- Exponential mechanism: the token is drawn with probability proportional
  to exp(score / tau) over the candidates, from the job's secret noise stream.

With C = inf (eps = inf) the set is the whole vocabulary and the score is
the mean of the B contexts' logits: ordinary sampling at temperature tau from
the private contexts' (logit-averaged) next-token distribution.
"""

from __future__ import annotations

import math

import torch


def dclip_scores(
    private: torch.Tensor, public: torch.Tensor, owner: torch.Tensor, clip: float, batch_size: int
) -> torch.Tensor:
    """Scores (docs, vocab): public logits plus the sum of each doc's clipped private differences over B.

    `private` is (rows, vocab), `public` (docs, vocab), and `owner[r]` the
    document private row r belongs to (a document may own any number of rows:
    the sum is divided by B, not by the rows it has).
    """
    diff = (private - public[owner]).clamp(-clip, clip)
    return public + torch.zeros_like(public).index_add_(0, owner, diff) / batch_size


def topk_plus(public: torch.Tensor, k: int, clip: float, batch_size: int) -> torch.Tensor:
    """Mask (docs, vocab) of the top-k+ set: public logit >= k-th largest public logit - 2C/B
    (all for k < 1 or C = inf)."""
    if k < 1 or k >= public.shape[-1] or math.isinf(clip):
        return torch.ones_like(public, dtype=torch.bool)
    kth = public.topk(k, dim=-1).values[:, -1:]
    return public >= kth - 2.0 * clip / batch_size


def token_distribution(
    private: torch.Tensor,
    public: torch.Tensor,
    owner: torch.Tensor,
    *,
    clip: float,
    batch_size: int,
    temperature: float,
    top_k: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(probabilities, top-k+ mask), both (docs, vocab): the exponential mechanism of one token per document."""
    scores = dclip_scores(private.float(), public.float(), owner, clip, batch_size)
    mask = topk_plus(public.float(), top_k, clip, batch_size)
    return torch.softmax(scores.masked_fill(~mask, -math.inf) / temperature, dim=-1), mask


def sample_tokens(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One token id per row of `probs`, drawn with `generator` (the job's secret noise stream)."""
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)


def outside_top_k(public: torch.Tensor, tokens: torch.Tensor, k: int) -> torch.Tensor:
    """Per document: whether its token came from the expansion of top-k+ (public logit below the k-th largest)."""
    if k < 1 or k >= public.shape[-1]:
        return torch.zeros_like(tokens, dtype=torch.bool)
    kth = public.topk(k, dim=-1).values[:, -1]
    return public.gather(1, tokens[:, None]).squeeze(1) < kth
