"""Downstream classifiers for the utility metric, built from the `classifier` config group.

Every classifier has one job: train on (texts, label indicator matrix), return
per-label scores in [0, 1] for the eval texts. Single-label and multi-label
tasks go through the same call; only the caller's decoding differs (argmax vs
threshold), so the two task kinds cannot drift apart.

Classifiers are plugins (`synbench.classifiers`): `_plugin_: tfidf` is the
fast scikit-learn baseline here; `_plugin_: transformer`
(synbench.metrics.transformer, imported only when chosen) fine-tunes a
Hugging Face encoder with Lightning.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from synbench.core.base import Classifier
from synbench.core.errors import ConfigError


@dataclass
class TfidfClassifier(Classifier):
    """TF-IDF n-grams with one logistic regression per label (one-vs-rest, single- and multi-label alike).

    One-vs-rest on the indicator matrix is what makes the two task kinds one
    code path; a label constant in the training data (a class the generator
    never wrote) becomes a constant predictor instead of an error.

    `class_weight: balanced` (the default) weighs each binary problem's two
    sides by the inverse of their frequency: macro F1 is the headline metric,
    and without it a logistic regression on a skewed training set predicts the
    big class (116 real reviews in their natural mix scored 0.383 macro F1,
    against 0.741 with a balanced label plan). `class_weight: null` is the
    unweighted fit.
    """

    name: str = "tfidf"
    ngram_max: int = 1
    min_df: int = 1
    max_features: int = 100_000
    C: float = 10.0
    max_iter: int = 1000
    class_weight: str | None = "balanced"  # scikit-learn's: "balanced" or null (every document weighs 1)

    def __post_init__(self) -> None:
        if self.class_weight not in (None, "balanced"):
            raise ConfigError(
                f"classifier.class_weight={self.class_weight!r} is unknown; choose balanced or null (unweighted)"
            )

    def fit_predict(
        self, train_texts: Sequence[str], train_y: np.ndarray, eval_texts: Sequence[str], multi_label: bool, seed: int
    ) -> np.ndarray:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.multiclass import OneVsRestClassifier

        vectorizer = TfidfVectorizer(
            ngram_range=(1, self.ngram_max), min_df=self.min_df, max_features=self.max_features, sublinear_tf=True
        )
        x_train = vectorizer.fit_transform(train_texts)
        model = OneVsRestClassifier(
            LogisticRegression(C=self.C, max_iter=self.max_iter, class_weight=self.class_weight, random_state=seed)
        )
        with warnings.catch_warnings():
            # "Label k is present in all training examples": a missing class, counted by the caller.
            warnings.filterwarnings("ignore", message="Label .* is present in all training examples")
            model.fit(x_train, train_y)
        return np.asarray(model.predict_proba(vectorizer.transform(eval_texts)), dtype=float)
