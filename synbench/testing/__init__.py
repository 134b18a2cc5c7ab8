"""The conformance kit: checks a plugin author runs from their own test suite.

Modelled on scikit-learn's `check_estimator`: each function builds the plugin
with `factory()`, exercises it on the kit's small public corpora as the core
would, and raises `ConformanceError` (an `AssertionError`) naming the plugin,
every contract it breaks and how to fix each. For example::

    from synbench.testing import check_generator
    from mygen_pkg.generator import MyGenerator

    def test_conformance():
        check_generator(MyGenerator)

The kit treats plugins as black boxes; it complements, not replaces, the
author's own tests of their privacy argument (sensitivity, calibration).
"""
from __future__ import annotations

from synbench.testing.attack import check_attack
from synbench.testing.corpora import LABELS, plant_sentinels, public_corpus
from synbench.testing.dataset import check_dataset
from synbench.testing.checks import ConformanceError, Failure
from synbench.testing.generator import check_generator
from synbench.testing.metric import check_metric
from synbench.testing.model_attack import check_model_attack

__all__ = [
    "LABELS", "ConformanceError", "Failure", "check_attack", "check_dataset", "check_generator", "check_metric",
    "check_model_attack", "plant_sentinels", "public_corpus",
]
