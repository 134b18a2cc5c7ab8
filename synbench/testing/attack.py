"""`check_attack`: the contracts of a `synbench.core.base.Attack`, checked from outside.

The audit stacks one score per target and run into a matrix and reads ROC
curves off it, so the kit checks that scores are one finite number per
target, that a target's score does not depend on its position in the list,
and, as a sanity check of direction ("larger means member"), that a release
which contains the member targets verbatim scores them above the
non-members on average.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from synbench.core.base import Attack, ModelAttack
from synbench.core.corpus import Corpus
from synbench.testing.checks import Checks, begin, checked_scores, describe
from synbench.testing.corpora import public_corpus

N_TARGETS = 12  # members and as many non-members


def check_attack(factory: Callable[[], Attack]) -> None:
    """Check that the attacks `factory()` builds keep the `Attack` contracts; raise `ConformanceError` if not."""
    built = factory()
    if isinstance(built, ModelAttack):  # its own kind, not an Attack: point to its own check before the subclass one
        Checks("attack", describe(built)).stop(
            "kind",
            "this is a ModelAttack: it scores a trained classifier's outputs, not released text",
            "check it with synbench.testing.check_model_attack",
        )
    first, checks = begin("attack", lambda: built, Attack)
    member_docs = public_corpus(part=0).subset(range(N_TARGETS))
    members = member_docs.texts
    non_members = public_corpus(part=1).texts[:N_TARGETS]
    targets = [t for pair in zip(members, non_members) for t in pair]  # member, non-member, member, ...
    filler = public_corpus(part=2)
    synthetic = Corpus.build(
        [*members, *filler.texts], [*member_docs.labels, *filler.labels], filler.label_space, name="copy-like-release"
    )
    references = [public_corpus(part=3, name="reference-0"), public_corpus(part=4, name="reference-1")]

    def score(texts: list[str]) -> np.ndarray:
        with checks.running("score", "score(targets, synthetic, references)"):
            out = factory().score(texts, synthetic, references)
        return checked_scores(
            out,
            len(texts),
            checks,
            "score()",
            "one score per target, in the targets' order",
            "clip or smooth log-probabilities",
        )

    scores = score(targets)
    if not np.allclose(score(targets[::-1])[::-1], scores, rtol=1e-6, atol=1e-9):
        checks.fail(
            "target-order",
            "scores changed when the same targets came in reverse order",
            "score each target on its own: the score of a target may not depend on the other targets or their order",
        )
    member_mean, non_member_mean = scores[0::2].mean(), scores[1::2].mean()
    if not member_mean > non_member_mean:
        checks.fail(
            "direction",
            f"on a release that contains the member targets verbatim, members scored "
            f"{member_mean:.4g} on average and non-members {non_member_mean:.4g}",
            "return larger scores for likelier members (the audit reads larger as member)",
        )
    checks.done()
