"""Attacks that need only the released synthetic text and a holdout of real non-members: no retraining, no runs.

`attack=holdout` follows Amin et al. 2026 ("Phantoms and Disclosures: a
Causal Framework for Auditing Synthetic Data"): a synthetic text that
resembles a real document is a disclosure only if the generator learned it
from that document; resemblance that arises anyway (a *phantom*) shows up
just as often for comparable documents the generator never saw, the
holdout. So a target is scored by how much closer the synthetic corpus
comes to it than to its comparable holdout documents:

    score(x) = sim_syn(x) - mean_{h in N(x)} sim_syn(h)

where sim_syn is the mean similarity of the `k` closest synthetic documents
(the similarity attack's measure, `synbench.audit.similarity`) and N(x) are
the `neighbours` holdout documents most similar to x. A typical target, in a
region the synthetic text covers densely, has neighbours that are matched as
closely as it is and scores about 0; a member the generator echoed scores
above its neighbours. Unlike `attack=similarity` with references, the
baseline is measured on the released corpus itself, so the attack needs no
reference corpus standing in for another run's output.

`attack=rare_echo` reads crafted high-perplexity canaries the way Panda et
al. (ICLR 2025, "Privacy auditing of large language models") read theirs:
only through the rare part, the secret. Each distinct word of a target,
and each run of up to `n` words (default 2: Panda et al. also craft
canaries from unlikely bigrams), is weighted by its surprisal under the
holdout's document frequencies, log((H + 1) / (df + 1)) over H holdout
documents, and the score is the share of the target's total weight found
anywhere in the synthetic corpus. What every comparable document uses
weighs nothing; what none uses (for a canary with
`audit.canary_suffix=rare`, each word of its suffix) weighs most. A rare
word appears in the output of a generator that never saw the target only
by chance (at the same rate for members and non-members), and it survives
reordering and paraphrase of the common words around it, and being spread
over several synthetic documents, which a closest-document similarity does
not see; the bigrams add what an echo that keeps the word order shows, for
targets made of common words only.

The holdout is what task=audit passes as reference corpora, less the
targets: the D_aux documents, which no private set of the design ever holds
(each reference also holds half the targets; those are dropped, so no
target counts as its own control). Both attacks are black box: the attacker
sees the synthetic corpus, the target texts and real non-member documents
from the same distribution, nothing of the generator.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np

from synbench.audit.similarity import SimilarityAttack, words
from synbench.core.base import Attack
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError


def holdout_texts(targets: Sequence[str], references: Sequence[Corpus]) -> tuple[str, ...]:
    """The distinct texts of the reference corpora that are no target's: real documents no private set held.

    Their order follows the references (never the targets'), so a target's
    score does not depend on where it stands in the target list.
    """
    excluded = set(targets)
    return tuple(dict.fromkeys(t for ref in references for t in ref.texts if t not in excluded))


class HoldoutAttack(SimilarityAttack):
    """Phantom-corrected closest match: how much closer the synthetic text comes to a target than to comparable
    holdout documents (Amin et al. 2026). Larger means member."""

    config_name = "holdout"

    def __init__(
        self,
        similarity: str = "jaccard",
        k: int = 1,
        unit: str = "word",
        n: int = 1,
        neighbours: int = 10,  # comparable holdout documents per target (the most similar to it)
        encoder: Mapping[str, Any] | None = None,
    ) -> None:
        """The similarity keys are attack=similarity's (`SimilarityAttack`); `neighbours` is this attack's own."""
        super().__init__(similarity, k, unit, n, reference=False, encoder=encoder)
        if neighbours < 1:
            raise ConfigError(f"attack.holdout.neighbours={neighbours!r} must be a positive whole number")
        self.neighbours = neighbours
        self._comparable = lru_cache(maxsize=2)(self._nearest_holdout)

    def score(self, targets: Sequence[str], synthetic: Corpus, references: Sequence[Corpus]) -> np.ndarray:
        """sim_syn(x) - mean sim_syn(h) over the `neighbours` holdout documents h most similar to x."""
        holdout = holdout_texts(targets, references)
        if len(holdout) < self.neighbours:
            raise ConfigError(
                f"attack.holdout compares each target with attack.holdout.neighbours={self.neighbours} holdout "
                f"documents but has {len(holdout)} (the reference corpora less the targets; task=audit passes "
                "D_aux); lower attack.holdout.neighbours"
            )
        comparable = self._comparable(tuple(targets), holdout)
        used, where = np.unique(comparable, return_inverse=True)  # only the holdout documents some target compares to
        phantom = self.closest(tuple(holdout[i] for i in used), synthetic.texts)
        return self.closest(tuple(targets), synthetic.texts) - phantom[where.reshape(comparable.shape)].mean(axis=1)

    def _nearest_holdout(self, targets: tuple[str, ...], holdout: tuple[str, ...]) -> np.ndarray:
        """(targets x neighbours) positions in `holdout` of each target's most similar documents (stable ties)."""
        return np.argsort(-self.similarities(targets, holdout), axis=1, kind="stable")[:, : self.neighbours]


def word_grams(text: str, n: int) -> set[str]:
    """The distinct lower-cased word n-grams of `text` of every size from 1 to `n`, words joined by a space."""
    seq = words(text)
    return {" ".join(seq[i : i + m]) for m in range(1, n + 1) for i in range(len(seq) - m + 1)}


class RareEchoAttack(Attack):
    """The share of a target's rarity (its word n-grams' holdout surprisal) that the synthetic corpus echoes (Panda
    et al. 2025's secret-only signal for crafted canaries). Larger means member."""

    def __init__(self, n: int = 2) -> None:
        if n < 1:
            raise ConfigError(f"attack.rare_echo.n={n!r} must be a positive whole number (1: words only)")
        self.n = n

    def score(self, targets: Sequence[str], synthetic: Corpus, references: Sequence[Corpus]) -> np.ndarray:
        """Per target x: sum of weight(g) over x's distinct n-grams g found in the release / sum over all of them.

        x's n-grams are its words and, up to size `n`, runs of consecutive
        words; weight(g) = log((H + 1) / (df(g) + 1)), df(g) the number of the
        H holdout documents holding g: 0 for a word every comparable document
        uses, largest for one none does (each word of a rare canary's
        suffix). A target whose n-grams all weigh 0 scores 0.
        """
        holdout = holdout_texts(targets, references)
        if not holdout:
            raise ConfigError(
                "attack.rare_echo needs holdout documents (the reference corpora less the targets; task=audit "
                "passes D_aux) to tell a target's rare words from common ones; run it from task=audit, or pass "
                "real non-member documents as references"
            )
        frequency = Counter(g for text in holdout for g in word_grams(text, self.n))
        released = set().union(*(word_grams(text, self.n) for text in synthetic.texts))
        top = math.log(len(holdout) + 1)
        out = np.zeros(len(targets))
        for i, text in enumerate(targets):
            weights = {g: top - math.log(frequency[g] + 1) for g in word_grams(text, self.n)}
            total = sum(weights.values())
            if total > 0:
                out[i] = sum(v for g, v in weights.items() if g in released) / total
        return out
