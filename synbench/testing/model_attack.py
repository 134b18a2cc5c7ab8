"""`check_model_attack`: the contracts of a `synbench.core.base.ModelAttack`, checked from outside.

`task=model_audit` hands an attack the per-example statistics of the audited
classifier and its reference models (`ModelSignals`) and reads one ROC off the
scores. The kit builds signals from a seeded paired design (every example IN
half of the reference models) in which members get a higher statistic, as
over-fitting gives them, and checks that scores are one finite number per
example, for one label column and for several, that permuting the examples
permutes the scores and nothing else, and that members score above
non-members on average ("larger means member").
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from synbench.core.base import ModelAttack, ModelSignals
from synbench.testing.checks import Checks, begin, checked_scores

N_EXAMPLES = 24  # members (even positions) and as many non-members
N_REFERENCES = 4
N_POPULATION = 32
SHIFT = 2.0  # how much training on an example raises its statistic (an over-fitted model)


def model_signals(n_labels: int, seed: int = 0) -> tuple[ModelSignals, np.ndarray]:
    """Signals of a paired design where training on an example raises its statistic, and the membership vector."""
    rng = np.random.default_rng(seed)
    members = np.arange(N_EXAMPLES) % 2 == 0
    inclusion = np.zeros((N_REFERENCES, N_EXAMPLES), dtype=bool)
    for i in range(N_EXAMPLES):
        inclusion[rng.permutation(N_REFERENCES)[: N_REFERENCES // 2], i] = True
    hardness = rng.normal(size=(N_EXAMPLES, n_labels))  # how confident any model is on the example

    def noisy(base: np.ndarray) -> np.ndarray:
        return base + rng.normal(scale=0.3, size=base.shape)

    references = noisy(hardness[None] + SHIFT * inclusion[:, :, None])
    target = noisy(hardness + SHIFT * members[:, None])
    population = rng.normal(size=(N_POPULATION, n_labels))
    signals = ModelSignals(
        target=target,
        references=references,
        inclusion=inclusion,
        population_target=noisy(population),
        population_references=noisy(np.broadcast_to(population, (N_REFERENCES, *population.shape))),
    )
    return signals, members


def permuted(signals: ModelSignals, order: np.ndarray) -> ModelSignals:
    """The same signals with the examples (not the population) in `order`."""
    return ModelSignals(
        target=signals.target[order],
        references=signals.references[:, order],
        inclusion=signals.inclusion[:, order],
        population_target=signals.population_target,
        population_references=signals.population_references,
    )


def _scores(factory: Callable[[], ModelAttack], signals: ModelSignals, checks: Checks, what: str) -> np.ndarray:
    with checks.running("score", f"score_models(signals) {what}"):
        out = factory().score_models(signals)
    return checked_scores(
        out,
        len(signals.target),
        checks,
        f"score_models() {what}",
        "one score per example (average over label columns)",
        "floor variances, clip log-likelihoods",
    )


def check_model_attack(factory: Callable[[], ModelAttack]) -> None:
    """Check that the model attacks `factory()` builds keep the `ModelAttack` contracts; raise `ConformanceError` if
    not."""
    _, checks = begin("model attack", factory, ModelAttack)
    for n_labels in (1, 3):
        what = f"with {n_labels} label column(s)"
        signals, members = model_signals(n_labels)
        scores = _scores(factory, signals, checks, what)
        order = np.random.default_rng(1).permutation(N_EXAMPLES)
        if not np.allclose(
            _scores(factory, permuted(signals, order), checks, what), scores[order], rtol=1e-6, atol=1e-9
        ):
            checks.fail(
                "example-order",
                f"{what}, permuting the examples changed their scores",
                "score each example from its own statistics (and the population's), not from its position",
            )
        member_mean, non_member_mean = scores[members].mean(), scores[~members].mean()
        if not member_mean > non_member_mean:
            checks.fail(
                "direction",
                f"{what}, on a model over-fitted to its members, members scored "
                f"{member_mean:.4g} on average and non-members {non_member_mean:.4g}",
                "return larger scores for likelier members (the model audit reads larger as member)",
            )
    checks.done()
