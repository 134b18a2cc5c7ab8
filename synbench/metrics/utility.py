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
import math
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


def f1_from_counts(tp: np.ndarray, wrong: np.ndarray) -> np.ndarray:
    """F1 = 2 TP / (2 TP + FP + FN) elementwise, from true positives and errors (FP + FN); 0 where both are 0."""
    scored = 2 * tp + wrong
    return np.divide(2 * tp, scored, out=np.zeros(np.shape(tp), dtype=float), where=scored > 0)


def per_class_f1(y_true: np.ndarray, y_pred: np.ndarray, label_space: Sequence[str]) -> dict[str, float]:
    """Each label's F1 (0 where it has neither a true nor a predicted document: no precision or recall)."""
    f1 = f1_from_counts((y_true * y_pred).sum(axis=0), (y_true != y_pred).sum(axis=0))
    return {label: float(value) for label, value in zip(label_space, f1, strict=True)}


def bootstrap_f1_sd(y_true: np.ndarray, y_pred: np.ndarray, draws: int, seed: int) -> tuple[float, float]:
    """The standard deviations of micro and macro F1 over `draws` resamples of the eval documents (with
    replacement): how much a fit's score owes to which documents the eval set happens to hold, the uncertainty a
    single fit's row (the real-data baseline) has no seeds to show. Macro F1 averages the labels present in each
    resample's truth or predictions, as `f1_micro_macro` does; vectorised over draws (document counts x label
    counts)."""
    n = len(y_true)
    if n == 0:
        return math.nan, math.nan
    weights = np.random.default_rng(seed).multinomial(n, np.full(n, 1 / n), size=draws).astype(float)
    tp = weights @ (y_true * y_pred)
    wrong = weights @ (y_true != y_pred).astype(float)
    present = weights @ ((y_true + y_pred) > 0).astype(float) > 0
    per_label = f1_from_counts(tp, wrong)
    macro = np.where(present.any(axis=1), (per_label * present).sum(axis=1) / np.maximum(present.sum(axis=1), 1), 0.0)
    micro = f1_from_counts(tp.sum(axis=1), wrong.sum(axis=1))
    return float(micro.std(ddof=1)), float(macro.std(ddof=1))


def matched_rows(train_labels: Sequence[Labels], wanted: Sequence[Labels], rng: np.random.Generator) -> list[int]:
    """Rows of the training split with the label sets of `wanted`, set by set: each set's documents without
    replacement, then again in a fresh order where the plan asks for more than the split holds; a set the split
    never holds is skipped."""
    rows_of: dict[Labels, list[int]] = {}
    for i, labels in enumerate(train_labels):
        rows_of.setdefault(tuple(sorted(labels)), []).append(i)
    need: dict[Labels, int] = {}
    for labels in wanted:
        key = tuple(sorted(labels))
        need[key] = need.get(key, 0) + 1
    out: list[int] = []
    for key, count in need.items():
        pool = rows_of.get(key, [])
        while pool and count > 0:
            take = rng.permutation(pool)[:count]
            out += [int(i) for i in take]
            count -= len(take)
    return out


def majority_set(y: np.ndarray) -> np.ndarray:
    """The most frequent non-empty row (label set) of a 0/1 label matrix, as floats; all zeros when there is none."""
    sets, counts = np.unique(y[y.any(axis=1)], axis=0, return_counts=True)
    return sets[counts.argmax()].astype(float) if len(sets) else np.zeros(y.shape[1])


BASELINE_MODES = ("eval", "train")
BASELINE_KEYS = frozenset(
    {
        "majority_f1",
        "majority_f1_macro",
        "real_f1",
        "real_f1_macro",
        "real_f1_eval_sd",
        "real_f1_macro_eval_sd",
        "matched_real_f1",
        "matched_real_f1_macro",
        "n_matched_repeats",
    }
)


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
        matched_control: bool = True,
        bootstrap_draws: int = 1000,
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
        if isinstance(bootstrap_draws, bool) or not isinstance(bootstrap_draws, int) or bootstrap_draws < 2:
            raise ConfigError(f"metrics.utility.bootstrap_draws={bootstrap_draws!r} must be an integer >= 2")
        self.matched_control = bool(matched_control) and baselines == "train"
        self.bootstrap_draws = bootstrap_draws

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
    ) -> dict[str, float]:
        """The upper bound (micro, macro) and the eval-set bootstrap SD of each, read from or written to the disk
        memo when the job has a cache folder."""
        train_mode = self.baselines == "train"
        payload = {
            "classifier": self.node,
            "threshold": self.threshold,
            "seed": ctx.seed,
            "v": __version__,
            "baselines": self.baselines,
            "folds": None if train_mode else self.baseline_folds,
            "bootstrap_draws": self.bootstrap_draws,
        }
        sources = (fits[0][0], real) if train_mode else (real,)  # eval mode: keyed by the eval corpus only
        key = resume_key(payload, *sources)
        path = Path(ctx.cache_dir) / "utility" / f"real_f1-{key}.json" if ctx.cache_dir else None
        if path is not None and path.exists():
            return json.loads(path.read_text())
        scores = np.zeros(y_eval.shape)
        for fit_on, rows in fits:
            scores[rows] = self._train_and_score(fit_on, real.subset(rows), ctx.seed)[0]
        predicted = decode(scores, real.multi_label, self.threshold)
        micro, macro = f1_micro_macro(y_eval, predicted)
        sd_micro, sd_macro = bootstrap_f1_sd(y_eval, predicted, self.bootstrap_draws, ctx.seed)
        found = {
            "real_f1": micro,
            "real_f1_macro": macro,
            "real_f1_eval_sd": sd_micro,
            "real_f1_macro_eval_sd": sd_macro,
        }
        if path is not None:
            write_json_atomic(path, found)
        return found

    def _matched_f1(self, train: Corpus, synthetic: Corpus, real: Corpus, y_eval: np.ndarray, seed: int) -> dict:
        """The positive control: the classifier trained on real training documents at the synthetic set's size and
        label plan (`matched_rows`), scored like the synthetic set. What a generator that released real documents
        in its own plan would score; if it does not beat public knowledge, nothing on this task can."""
        rows = matched_rows(train.labels, synthetic.labels, np.random.default_rng(seed))
        plan = Corpus.build(
            [train.texts[i] for i in rows],
            [train.labels[i] for i in rows],
            train.label_space,
            multi_label=train.multi_label,
            name="matched-real",
        )  # not `subset`: a repeated document needs an id of its own
        scores = self._train_and_score(plan, real, seed)[0]
        micro, macro = self._f1(y_eval, scores, real.multi_label)
        return {
            "matched_real_f1": micro,
            "matched_real_f1_macro": macro,
            "n_matched_repeats": len(rows) - len(set(rows)),
        }

    def __call__(self, real: Corpus, synthetic: Corpus, ctx: MetricContext) -> dict[str, float]:
        fits = self._fits(real, ctx)
        y_eval, _ = indicator(real.labels, real.label_space)
        n_eval, n_labels = y_eval.shape
        scores, syn_y, n_unknown = self._train_and_score(synthetic, real, ctx.seed)
        predicted = decode(scores, real.multi_label, self.threshold)
        f1 = f1_micro_macro(y_eval, predicted)
        rng = np.random.default_rng(ctx.seed)
        random = np.mean(
            [self._f1(y_eval, rng.random((n_eval, n_labels)), real.multi_label) for _ in range(self.random_draws)],
            axis=0,
        )
        majority_scores = np.zeros(y_eval.shape)
        for fit_on, rows in fits:
            majority_scores[rows] = majority_set(indicator(fit_on.labels, real.label_space)[0])
        majority = self._f1(y_eval, majority_scores, real.multi_label)
        matched = (
            self._matched_f1(ctx.train, synthetic, real, y_eval, ctx.seed)
            if self.matched_control and ctx.train is not None and len(synthetic)
            else {}
        )
        return {
            "f1_micro": f1[0],
            "f1_macro": f1[1],
            "f1_per_class": per_class_f1(y_eval, predicted, real.label_space),
            "support": {label: int(n) for label, n in zip(real.label_space, y_eval.sum(axis=0), strict=True)},
            "random_f1": float(random[0]),
            "random_f1_macro": float(random[1]),
            "majority_f1": majority[0],
            "majority_f1_macro": majority[1],
            **self._real_f1(fits, real, y_eval, ctx),
            **matched,
            "n_train": len(syn_y),
            "n_unknown_labels": n_unknown,
            "n_missing_classes": int((syn_y.sum(axis=0) == 0).sum()),
        }
