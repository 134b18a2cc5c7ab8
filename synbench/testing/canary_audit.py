"""The kit's optional one-run canary audit (`check_generator(..., audit=True)`): an empirical lower bound on epsilon.

The sentinel check catches a generator that writes private words back; a
generator can leak less visibly (perturbed copies, memorised phrases). The
audit measures instead of searching, with `synbench.audit`'s one-run design
(Steinke, Nasr & Jagielski 2023): canaries (an in-distribution prefix and 15
random public words, `synbench.audit.canaries`) each enter the one private
set independently with probability 1/2, the generator is fitted once and
samples as many documents as the set was planned to hold, the n-gram attack
(`attack=ngram`, whitespace tokens) scores every canary against the output
and `D_aux` references, and `synbench.audit.summary.summarise` turns the
scores into a lower bound on epsilon at `confidence`.

The design seed (membership coins and canary words) comes from `secrets`,
fresh on every call: the coins must be independent of everything the
generator draws, including the randomness it derives from the public `seed`.
A generator that is (eps, delta)-DP at the eps it reports then exceeds the
bound with probability at most 1 - confidence (5 % at 95 %); in practice far
less, as one-run bounds are loose. A generator that copies half its private
documents verbatim is bounded far above any eps it could claim.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np

from synbench.audit.canaries import make_canaries, with_canaries
from synbench.audit.config import AuditOptions
from synbench.audit.design import make_design
from synbench.audit.ngram import NgramAttack
from synbench.audit.summary import summarise
from synbench.core.corpus import Corpus
from synbench.testing.corpora import public_corpus

AUDIT_CANARIES = 1000  # about 500 members: a verbatim copier of half its documents is bounded above eps 3
AUDIT_CONFIDENCE = AuditOptions.confidence  # the audit's own level (its default, in one place)
BASE_PER_LABEL = 72  # every sentence the kit's word lists make for its smallest label: 216 documents, a third private


@dataclass(frozen=True)
class CanaryAudit:
    """One drawn audit: the private set the generator sees, and what the attack needs to score its output."""

    private: Corpus  # D_prv plus the canaries drawn in
    planned_size: int  # D_prv plus half the canaries: the synthetic corpus size, fixed before the coins
    targets: tuple[str, ...]  # the canaries' texts
    members: np.ndarray  # (1, T) bool: canary t is in the private set
    kinds: np.ndarray  # (T,) all 1 (canaries)
    references: tuple[Corpus, ...]  # D_aux corpora, half of them holding each canary
    seed: int  # the secret design seed (target folds of the bound)

    @classmethod
    def draw(cls, n_canaries: int) -> "CanaryAudit":
        """A fresh one-run design over the kit's public corpus with `n_canaries` canaries, from a secret seed."""
        base = public_corpus(per_label=BASE_PER_LABEL, name="synbench-testing-audit")
        seed = secrets.randbits(63)
        rule = AuditOptions(mode="one_run", targets="canaries", n_canaries=n_canaries)
        design = make_design(len(base), np.zeros(0, dtype=np.int64), rule, seed=seed)
        pool = with_canaries(base, make_canaries(base.subset(design.aux), rule, seed))
        references = tuple(pool.subset(design.reference_set(m)) for m in range(len(design.ref_base)))
        return cls(
            private=pool.subset(design.private_set(0), name="synbench-testing-audit-private"),
            planned_size=design.planned_private_size(),
            targets=pool.subset(design.targets).texts,
            members=design.inclusion,
            kinds=design.kinds,
            references=references,
            seed=seed,
        )

    def bound(self, synthetic: Corpus, delta: float, confidence: float = AUDIT_CONFIDENCE) -> dict[str, Any]:
        """The one-run audit's figures for `synthetic` (`eps_emp_lower` is the bound at `confidence`)."""
        scores = NgramAttack(n=2, tokenizer="whitespace").score(self.targets, synthetic, self.references)
        cfg = AuditOptions(mode="one_run", targets="canaries", n_canaries=len(self.targets), confidence=confidence)
        summary, _, _ = summarise(
            np.asarray(scores, dtype=float)[None, :], self.members, cfg, delta, self.kinds, self.seed
        )
        return summary
