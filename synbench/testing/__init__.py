"""The conformance kit: checks a plugin author runs from their own test suite.

Modelled on scikit-learn's `check_estimator`: each function builds the plugin
with `factory()`, exercises it on the kit's small public corpora as the core
would, and raises `ConformanceError` (an `AssertionError`) naming the plugin,
every contract it breaks and how to fix each. For example::

    from synbench.testing import check_generator
    from mygen_pkg.generator import MyGenerator

    def test_conformance():
        check_generator(MyGenerator)

or, to see each named check pass or fail as its own test case (as
scikit-learn's `parametrize_with_checks`)::

    from synbench.testing import parametrize_with_checks

    @parametrize_with_checks([MyGenerator])
    def test_conformance(check):
        check()

The generator checks read what a generator writes: random sentinel words
planted in the private corpus must never come out of `sample()`, and with
`audit=True` a one-run canary audit bounds the epsilon it really spends.
The kit treats plugins as black boxes; it complements, not replaces, the
author's own tests of their privacy argument (sensitivity, calibration).
"""

from __future__ import annotations

from synbench.testing.attack import check_attack
from synbench.testing.checks import ConformanceError, Failure
from synbench.testing.corpora import LABELS, plant_sentinels, public_corpus, sentinel_word
from synbench.testing.dataset import check_dataset
from synbench.testing.generator import GeneratorKit, check_generator, generator_checks, parametrize_with_checks
from synbench.testing.metric import check_metric
from synbench.testing.model_attack import check_model_attack

__all__ = [
    "LABELS",
    "ConformanceError",
    "Failure",
    "GeneratorKit",
    "check_attack",
    "check_dataset",
    "check_generator",
    "check_metric",
    "check_model_attack",
    "generator_checks",
    "parametrize_with_checks",
    "plant_sentinels",
    "public_corpus",
    "sentinel_word",
]
