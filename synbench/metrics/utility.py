"""`utility`: train a classifier on the synthetic corpus, measure micro and macro F1 on the real eval split.

One code path for single- and multi-label tasks: labels become a 0/1 matrix
over the task's label space, the classifier returns per-label scores, and
only the decoding differs: argmax (single-label) or score >= `threshold`
(multi-label; sigmoid outputs). Macro F1 averages over the labels that occur
in the eval truth or the predictions (scikit-learn's rule for label arrays),
so a class absent from a tiny eval split is not scored as a zero.

Every row carries its baselines, all computed here:

- `random_f1`: uniform random scores through the same decoding (a uniformly
  random class; for multi-label each label with probability 1 - threshold),
  averaged over `random_draws` seeded draws.
- `majority_f1`: the most frequent label set predicted for every eval
  document, as scikit-learn's `DummyClassifier(strategy="most_frequent")`
  would (over label sets, so it is not the empty set for multi-label tasks).
- `real_f1`: the same classifier trained on real data, the upper bound. It is
  the same for every generator and epsilon of a sweep, so it is kept on disk
  under `cache_dir`, in a file named by a keyed hash (`synbench.job.resume`) of
  mode, data, config and seed: the name is no digest of the private data.

Where the real data for the last two comes from is `baselines`:

- `train` (the default): both baselines fitted on the private training split
  (`MetricContext.train`) and scored on the real eval split, as the paper
  trains its upper bound. The copy control (which releases the training
  split in order) then scores exactly `real_f1`, so no generator can beat
  "real data" by being the real data. The values are statistics of private
  data without noise, the operator's own reference like the audit's figures:
  the metric names them in `diagnostic_keys`, and the job writes them and
  lists them in `non_dp_outputs`.
- `eval`: the real held-out eval split only, by cross-fitting, for results
  that must hold DP outputs only. The eval split is cut into
  `baseline_folds` seeded folds (fewer, but at least 2, when it has fewer
  documents); each fold is predicted by the classifier trained on, and the
  majority label set of, the other folds, and F1 is computed once over all
  the out-of-fold predictions. It touches no private training document, so
  every output of the metric may leave the job; its upper bound trains on
  less data than the paper's, so it is lower.

`<name>_f1` is micro F1 and `<name>_f1_macro` macro F1. Synthetic labels
outside the label space are dropped and counted (`n_unknown_labels`); a
document left with none is not trained on; classes the synthetic data never
contains are counted (`n_missing_classes`) and simply never predicted; with
nothing to learn from (no documents, empty texts, or no label that varies)
the classifier predicts the label frequencies of its training data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from synbench import __version__
from synbench.core import registry
from synbench.core.base import Classifier, Metric, MetricContext
from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import ConfigError
from synbench.core.files import write_json_atomic
from synbench.job.resume import resume_key

# The dtype of every 0/1 label matrix. It must hold any column index: scikit-learn (1.9's `label_binarize`, inside
# OneVsRestClassifier) casts the class indices 0..L-1 to the label matrix's integer dtype, so int8 wrapped at 128
# labels and scored each column with another label's model.
LABEL_DTYPE = np.int64


def indicator(labels: Sequence[Labels], label_space: Sequence[str]) -> tuple[np.ndarray, int]:
    """The 0/1 label matrix over `label_space` and the number of labels outside it (dropped)."""
    column = {label: j for j, label in enumerate(label_space)}
    matrix = np.zeros((len(labels), len(label_space)), dtype=LABEL_DTYPE)
    unknown = 0
    for i, doc_labels in enumerate(labels):
        for label in doc_labels:
            if label in column:
                matrix[i, column[label]] = 1
            else:
                unknown += 1
    return matrix, unknown


def decode(scores: np.ndarray, multi_label: bool, threshold: float) -> np.ndarray:
    """Predicted 0/1 matrix: scores >= threshold (multi-label) or a one-hot argmax (single-label)."""
    if multi_label:
        return (scores >= threshold).astype(LABEL_DTYPE)
    out = np.zeros(scores.shape, dtype=LABEL_DTYPE)
    if scores.size:
        out[np.arange(len(scores)), scores.argmax(axis=1)] = 1
    return out


def f1_micro_macro(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[float, float]:
    """Micro F1 over all labels; macro F1 over the labels present in truth or prediction."""
    from sklearn.metrics import f1_score

    micro = float(f1_score(y_true, y_pred, average="micro", zero_division=0))
    present = y_true.any(axis=0) | y_pred.any(axis=0)
    macro = (
        float(f1_score(y_true[:, present], y_pred[:, present], average="macro", zero_division=0))
        if present.any()
        else 0.0
    )
    return micro, macro


def majority_set(y: np.ndarray) -> np.ndarray:
    """The most frequent non-empty row (label set) of a 0/1 label matrix, as floats; all zeros when there is none."""
    sets, counts = np.unique(y[y.any(axis=1)], axis=0, return_counts=True)
    return sets[counts.argmax()].astype(float) if len(sets) else np.zeros(y.shape[1])


BASELINE_MODES = ("eval", "train")
BASELINE_KEYS = frozenset({"majority_f1", "majority_f1_macro", "real_f1", "real_f1_macro"})


class UtilityMetric(Metric):
    section = "utility"
    higher_is_better = {"f1_micro": True, "f1_macro": True}

    def __init__(
        self,
        classifier: Mapping[str, Any],
        threshold: float = 0.5,
        random_draws: int = 10,
        baselines: str = "train",
        baseline_folds: int = 5,
    ) -> None:
        if not 0.0 < float(threshold) < 1.0:
            raise ConfigError(f"metrics.utility.threshold={threshold!r} must lie strictly between 0 and 1")
        if baselines not in BASELINE_MODES:
            raise ConfigError(
                f"metrics.utility.baselines={baselines!r} is unknown; choose one of {', '.join(BASELINE_MODES)}"
            )
        if isinstance(baseline_folds, bool) or not isinstance(baseline_folds, int) or baseline_folds < 2:
            raise ConfigError(f"metrics.utility.baseline_folds={baseline_folds!r} must be an integer >= 2")
        self.node = dict(classifier)
        self.classifier = registry.create(Classifier, self.node)
        self.threshold = float(threshold)
        self.random_draws = max(1, int(random_draws))
        self.baselines = baselines
        self.baseline_folds = baseline_folds

    def diagnostic_keys(self) -> frozenset[str]:
        return BASELINE_KEYS if self.baselines == "train" else frozenset()

    def _fits(self, real: Corpus, ctx: MetricContext) -> list[tuple[Corpus, np.ndarray]]:
        """(real data a baseline is fitted on, the eval rows it predicts): the private training split for every
        row, or each cross-fitting fold of the eval split predicted from the other folds."""
        if self.baselines == "train":
            if ctx.train is None:
                raise ConfigError("metrics.utility.baselines=train needs the real training split (MetricContext.train)")
            return [(ctx.train, np.arange(len(real)))]
        order = np.random.default_rng(ctx.seed).permutation(len(real))
        folds = np.array_split(order, max(2, min(self.baseline_folds, len(real))))
        return [(real.subset(np.setdiff1d(order, rows)), rows) for rows in folds if len(rows)]

    def _train_and_score(self, corpus: Corpus, real: Corpus, seed: int) -> tuple[np.ndarray, np.ndarray, int]:
        """Scores on `real` of the classifier trained on `corpus`, its training label matrix, and the unknown labels
        dropped."""
        y, unknown = indicator(corpus.labels, real.label_space)
        keep = y.sum(axis=1) > 0
        y = y[keep]
        texts = [t for t, k in zip(corpus.texts, keep) if k]
        varies = len(y) > 0 and bool((y.min(axis=0) != y.max(axis=0)).any())
        if not varies or not any(t.strip() for t in texts):
            prior = y.mean(axis=0) if len(y) else np.zeros(y.shape[1])
            return np.tile(prior, (len(real), 1)), y, unknown
        return self.classifier.fit_predict(texts, y, real.texts, real.multi_label, seed), y, unknown

    def _f1(self, y_eval: np.ndarray, scores: np.ndarray, multi_label: bool) -> tuple[float, float]:
        return f1_micro_macro(y_eval, decode(scores, multi_label, self.threshold))

    def _real_f1(
        self, fits: list[tuple[Corpus, np.ndarray]], real: Corpus, y_eval: np.ndarray, ctx: MetricContext
    ) -> tuple[float, float]:
        """The upper bound, read from or written to the disk memo when the job has a cache folder."""
        train_mode = self.baselines == "train"
        payload = {
            "classifier": self.node,
            "threshold": self.threshold,
            "seed": ctx.seed,
            "v": __version__,
            "baselines": self.baselines,
            "folds": None if train_mode else self.baseline_folds,
        }
        sources = (fits[0][0], real) if train_mode else (real,)  # eval mode: keyed by the eval corpus only
        key = resume_key(payload, *sources)
        path = Path(ctx.cache_dir) / "utility" / f"real_f1-{key}.json" if ctx.cache_dir else None
        if path is not None and path.exists():
            stored = json.loads(path.read_text())
            return stored["micro"], stored["macro"]
        scores = np.zeros(y_eval.shape)
        for fit_on, rows in fits:
            scores[rows] = self._train_and_score(fit_on, real.subset(rows), ctx.seed)[0]
        micro, macro = self._f1(y_eval, scores, real.multi_label)
        if path is not None:
            write_json_atomic(path, {"micro": micro, "macro": macro})
        return micro, macro

    def __call__(self, real: Corpus, synthetic: Corpus, ctx: MetricContext) -> dict[str, float]:
        fits = self._fits(real, ctx)
        y_eval, _ = indicator(real.labels, real.label_space)
        n_eval, n_labels = y_eval.shape
        scores, syn_y, n_unknown = self._train_and_score(synthetic, real, ctx.seed)
        f1 = self._f1(y_eval, scores, real.multi_label)
        rng = np.random.default_rng(ctx.seed)
        random = np.mean(
            [self._f1(y_eval, rng.random((n_eval, n_labels)), real.multi_label) for _ in range(self.random_draws)],
            axis=0,
        )
        majority_scores = np.zeros(y_eval.shape)
        for fit_on, rows in fits:
            majority_scores[rows] = majority_set(indicator(fit_on.labels, real.label_space)[0])
        majority = self._f1(y_eval, majority_scores, real.multi_label)
        real_f1 = self._real_f1(fits, real, y_eval, ctx)
        return {
            "f1_micro": f1[0],
            "f1_macro": f1[1],
            "random_f1": float(random[0]),
            "random_f1_macro": float(random[1]),
            "majority_f1": majority[0],
            "majority_f1_macro": majority[1],
            "real_f1": real_f1[0],
            "real_f1_macro": real_f1[1],
            "n_train": len(syn_y),
            "n_unknown_labels": n_unknown,
            "n_missing_classes": int((syn_y.sum(axis=0) == 0).sum()),
        }
