"""Utility and fidelity metrics: known answers, degenerate inputs, config composition, a job end to end."""

from __future__ import annotations

import json
import logging
import math
import os
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sklearn.dummy import DummyClassifier
from sklearn.metrics import f1_score

from conftest import compose_config, run_cli
from synbench.core import registry
from synbench.core.base import EncoderSpec, Metric, MetricContext
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError, PluginError
from synbench.core.privacy import PrivacySpec
from synbench.generators.copy import CopyGenerator
from synbench.metrics.common import counter_js, counter_kl, js_divergence, kl_divergence, matched_sample, real_halves
from synbench.metrics.entities import EntitiesMetric
from synbench.metrics.labels import LabelsMetric
from synbench.metrics.length import LengthMetric
from synbench.metrics.mauve import FAISS_FEW_POINTS, MauveMetric, stderr_without
from synbench.metrics.utility import (
    UtilityMetric,
    bootstrap_f1_sd,
    decode,
    f1_micro_macro,
    matched_rows,
    per_class_f1,
)

REQUIRED = {
    "utility": ("f1_micro", "f1_macro", "random_f1", "majority_f1", "real_f1", "n_unknown_labels", "n_missing_classes"),
    "fidelity": (
        "mauve",
        "mauve_std",
        "mauve_ref",
        "entity_div",
        "entity_div_ref",
        "length_div",
        "length_div_ref",
        "label_cardinality_div",
        "label_cardinality_div_ref",
        "label_multi_share_syn",
        "label_set_div",
    ),
}
TFIDF = {"_plugin_": "tfidf", "name": "tfidf"}
FAKE = EncoderSpec(name="fake", pretrained="fake")


class FakeEncoder:
    """Stands in for a SentenceTransformer: text 'topicK ...' maps near centre K; counts its calls."""

    centres = np.random.default_rng(0).normal(size=(10, 16))

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        self.calls += 1
        return np.asarray([self._row(t) for t in texts], dtype=np.float32)

    def _row(self, text: str) -> np.ndarray:
        if not text.strip():  # like a real encoder: every empty text lands on one fixed point
            return np.full(16, 3.0)
        noise = np.random.default_rng(zlib.crc32(text.encode())).normal(scale=0.3, size=16)
        return self.centres[int(text.split()[0].removeprefix("topic"))] + noise


@pytest.fixture
def fake_encoder(monkeypatch: pytest.MonkeyPatch) -> FakeEncoder:
    encoder = FakeEncoder()
    monkeypatch.setattr("synbench.text.embeddings.load_encoder", lambda spec: encoder)
    return encoder


def corpus(
    texts: list[str],
    labels: list[list[str]] | None = None,
    space: tuple[str, ...] = ("neg", "pos"),
    multi: bool = False,
    name: str = "c",
) -> Corpus:
    return Corpus.build(texts, labels or [["pos"]] * len(texts), space, multi_label=multi, name=name)


def topics(first: int, n: int) -> list[str]:
    return [f"topic{first + i % 5} document {i}" for i in range(n)]


def context(train: Corpus | None = None, **kw: object) -> MetricContext:
    return MetricContext(seed=0, job_dir=".", train=train, encoder=FAKE, **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------- divergences


def test_js_divergence_known_values() -> None:
    assert js_divergence(np.array([3, 1, 0]), np.array([3, 1, 0]), 0.5) == 0.0
    assert js_divergence(np.array([1000, 0]), np.array([0, 1000]), 1e-9) == pytest.approx(1.0, abs=1e-6)
    # p = (0.75, 0.25), q = (0.25, 0.75) after add-1 smoothing of counts (2, 0) and (0, 2).
    p, q = np.array([0.75, 0.25]), np.array([0.25, 0.75])
    m = (p + q) / 2
    expected = 0.5 * np.sum(p * np.log2(p / m)) + 0.5 * np.sum(q * np.log2(q / m))
    assert js_divergence(np.array([2, 0]), np.array([0, 2]), 1.0) == pytest.approx(expected)
    assert counter_js({"a": 2}, {"b": 2}, 1.0) == pytest.approx(expected)
    assert js_divergence(np.array([]), np.array([]), 0.5) == 0.0


def test_paper_kl_divergence_known_values() -> None:
    # counts (3, 1) and (1, 3), add-half smoothing: p = (0.7, 0.3), q = (0.3, 0.7); KL = 0.4 ln(7/3) nats
    assert kl_divergence(np.array([3, 1]), np.array([1, 3]), 0.5) == pytest.approx(0.4 * np.log(7 / 3))
    # almost no smoothing: KL((3/4, 1/4) || (1/4, 3/4)) = 0.5 ln 3
    assert kl_divergence(np.array([3, 1]), np.array([1, 3]), 1e-12) == pytest.approx(0.5 * np.log(3))
    # not symmetric: p = (4, 1, 1) / 6 from counts (3, 0, 0) + 1, q uniform from (1, 1, 1) + 1; the real side is p
    p, q = np.array([4, 1, 1]) / 6, np.array([1, 1, 1]) / 3
    assert kl_divergence(np.array([3, 0, 0]), np.array([1, 1, 1]), 1.0) == pytest.approx(np.sum(p * np.log(p / q)))
    assert kl_divergence(np.array([1, 1, 1]), np.array([3, 0, 0]), 1.0) == pytest.approx(np.sum(q * np.log(q / p)))
    assert counter_kl({"a": 3, "b": 1}, {"a": 1, "b": 3}, 0.5) == pytest.approx(0.4 * np.log(7 / 3))
    assert counter_kl({"a": 2}, {"a": 2}, 0.5) == 0.0 and kl_divergence(np.array([]), np.array([]), 0.5) == 0.0
    assert kl_divergence(np.array([1000, 0]), np.array([0, 1000]), 0.5) > 2.2  # unbounded, unlike JS in bits


def test_length_divergence_identical_zero_and_shifted_large() -> None:
    metric, ctx = LengthMetric(tokenizer="whitespace"), context()
    lengths = np.arange(1, 101, dtype=float)
    assert metric.compare(lengths, lengths, ctx)["length_div"] == 0.0
    assert metric.compare(lengths, lengths + 1000, ctx)["length_div"] > 0.7  # smoothing caps it below 1
    real = corpus([" ".join(["w"] * (5 + i % 40)) for i in range(120)])
    same = metric(real, real, ctx)
    longer = metric(real, corpus([" ".join(["w"] * (200 + i)) for i in range(120)]), ctx)
    assert same["length_div"] < 0.1 and same["length_div_ref"] < 0.1
    assert longer["length_div"] > 0.5 and longer["length_div_ref"] < 0.1
    assert longer["length_div_paper"] > 1.0 > same["length_div_paper_ref"]
    assert longer["length_mean_syn"] > 200


def test_entity_divergence_known_answers() -> None:
    people = ["Alice Johnson", "Robert Smith", "Maria Garcia", "David Lee"]
    places = ["London", "Paris", "Berlin", "Madrid"]
    real = corpus([f"{people[i % 4]} flew to {places[i % 4]} on Monday for Google." for i in range(40)])
    soups = ["warm", "cold", "salty", "sweet", "thick"]
    unrelated = corpus([f"the weather was mild and the soup was {soups[i % 5]}." for i in range(40)])
    metric, ctx = EntitiesMetric(), context()
    same = metric(real, real, ctx)
    other = metric(real, unrelated, ctx)
    features = metric.features(real.texts, ctx)
    assert metric.compare(features, features, ctx) == {
        "entity_div": 0.0,
        "entity_label_div": 0.0,
        "entity_div_paper": 0.0,
    }
    assert other["entity_div_paper"] > 1.0 and same["entity_div_paper_ref"] < 0.5
    assert same["entity_div"] < 0.1 and same["entity_label_div"] < 0.1
    assert other["entity_div"] > same["entity_div_ref"] + 0.5
    assert other["entity_label_div"] > same["entity_label_div_ref"] + 0.5
    assert other["entities_per_doc_syn"] < 0.5 < other["entities_per_doc_real"]
    assert ctx.cache[f"entities:{metric.model}"]  # parsed once, kept for the next metric


def test_label_metric_known_answers() -> None:
    space = ("a", "b", "c")
    sets = [["a"], ["a", "b"], ["b", "c"], ["a", "b", "c"]]
    real = corpus([f"r{i}" for i in range(40)], [sets[i % 4] for i in range(40)], space, multi=True)
    one_label = corpus([f"s{i}" for i in range(40)], [[space[i % 3]] for i in range(40)], space, multi=True)
    metric, ctx = LabelsMetric(), context()
    assert metric.compare(metric.corpus_features(real, ctx), metric.corpus_features(real, ctx), ctx) == {
        "label_cardinality_div": 0.0,
        "label_set_div": 0.0,
    }
    same = metric(real, real, ctx)
    single = metric(real, one_label, ctx)
    # both sides of the score: real half B against a seeded sample of |A| = 20 synthetic documents
    half_a, half_b = real_halves(40, 0)
    b_sizes = Counter(len(real.labels[i]) for i in half_b)
    sampled = Counter(len(real.labels[i]) for i in matched_sample(40, len(half_a), 0))
    assert (
        same["label_cardinality_div"] == pytest.approx(counter_js(b_sizes, sampled, 0.5))
        and same["label_cardinality_div"] < 0.1
    )
    assert single["label_cardinality_div"] == pytest.approx(counter_js(b_sizes, {1: 20}, 0.5))
    assert (
        single["label_cardinality_div"] > 0.3 > single["label_cardinality_div_ref"] == same["label_cardinality_div_ref"]
    )
    assert single["label_set_div"] > 0.3 > same["label_set_div"]
    assert same["label_multi_share_real"] == 0.75 and same["label_cardinality_mean_real"] == pytest.approx(2.0)
    assert single["label_multi_share_syn"] == 0.0 and single["label_cardinality_mean_syn"] == 1.0
    # the order and repeats of a document's labels do not change its set
    shuffled_labels = corpus(
        [f"r{i}" for i in range(40)], [sets[i % 4][::-1] * 2 for i in range(40)], space, multi=True
    )
    assert metric(real, shuffled_labels, ctx)["label_set_div"] == same["label_set_div"]


def test_mauve_identical_high_unrelated_low_embedded_once(fake_encoder: FakeEncoder) -> None:
    real = corpus(topics(0, 200))
    metric, ctx = MauveMetric(kmeans_seeds=3, kmeans_num_redo=1), context()
    features = metric.features(real.texts, ctx)
    assert metric.compare(features, features, ctx)["mauve"] == pytest.approx(1.0, abs=1e-3)
    same = metric(real, real, ctx)
    other = metric(real, corpus(topics(5, 200)), ctx)
    assert same["mauve"] > 0.8 and same["mauve_ref"] > 0.8
    assert other["mauve"] < 0.2 < other["mauve_ref"]
    assert set(same) >= {"mauve", "mauve_std", "mauve_ref", "mauve_std_ref", "mauve_n_empty"}
    calls = fake_encoder.calls
    metric(real, real, ctx)  # every list of texts was seen before: served from the job's cache
    assert fake_encoder.calls == calls


def test_mauve_counts_and_keeps_empty_synthetic_texts(fake_encoder: FakeEncoder) -> None:
    real = corpus(topics(0, 100))
    metric, ctx = MauveMetric(kmeans_seeds=2, kmeans_num_redo=1), context()
    mostly_empty = metric(real, corpus(topics(0, 20) + [""] * 80), ctx)
    assert mostly_empty["mauve_n_empty"] == 80
    assert mostly_empty["mauve"] < mostly_empty["mauve_ref"] - 0.5  # empties are scored, not dropped
    assert metric(real, corpus([""] * 100), ctx)["mauve"] < 0.1
    assert metric(real, corpus([], []), ctx)["mauve"] == 0.0


def test_mauve_drops_faiss_noise_from_stderr_and_passes_on_the_rest(capfd: pytest.CaptureFixture[str]) -> None:
    """faiss's k-means warns on C stderr when a bucket has fewer than 39 points (here 20: 6 auto buckets over 120
    points); the MAUVE call drops that line, anything else written to stderr there still shows, and faiss's
    import-time INFO lines (which CPU builds it could not load) stay below WARNING."""
    features = np.random.default_rng(0).normal(size=(60, 8)).astype(np.float32)
    capfd.readouterr()
    assert MauveMetric(kmeans_seeds=2, kmeans_num_redo=1).compare(features, features, context())["mauve"] > 0.9
    assert "please provide at least" not in capfd.readouterr().err
    assert logging.getLogger("faiss.loader").getEffectiveLevel() == logging.WARNING
    with stderr_without(FAISS_FEW_POINTS):
        os.write(2, b"WARNING clustering 148 points to 7 centroids: please provide at least 273 training points\n")
        os.write(2, b"faiss: a line that is not the bucket warning\n")
    assert capfd.readouterr().err == "faiss: a line that is not the bucket warning\n"


# ---------------------------------------------------------------- utility


def test_multilabel_f1_matches_sklearn_on_a_hand_made_case() -> None:
    y_true = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]])
    scores = np.array([[0.9, 0.2, 0.4], [0.1, 0.8, 0.6], [0.7, 0.3, 0.1], [0.2, 0.1, 0.95]])
    y_pred = decode(scores, multi_label=True, threshold=0.5)
    assert y_pred.tolist() == [[1, 0, 0], [0, 1, 1], [1, 0, 0], [0, 0, 1]]
    micro, macro = f1_micro_macro(y_true, y_pred)
    assert micro == pytest.approx(f1_score(y_true, y_pred, average="micro"))
    assert macro == pytest.approx(f1_score(y_true, y_pred, average="macro"))
    assert decode(scores, multi_label=False, threshold=0.5).sum(axis=1).tolist() == [1, 1, 1, 1]


def sentiment(n: int, offset: int = 0) -> Corpus:
    good, bad = "great excellent wonderful", "awful terrible horrible"
    texts = [f"review {i}: {good if i % 3 else bad} product" for i in range(offset, offset + n)]
    return corpus(texts, [["pos" if i % 3 else "neg"] for i in range(offset, offset + n)], name=f"s{offset}")


def shuffled(c: Corpus, seed: int = 1) -> Corpus:
    order = np.random.default_rng(seed).permutation(len(c))
    return corpus(list(c.texts), [list(c.labels[i]) for i in order], name=f"{c.name}-shuffled")


def test_utility_shuffled_labels_score_lower_and_baselines_are_computed() -> None:
    train, real = sentiment(60), sentiment(30, offset=100)
    metric, ctx = UtilityMetric(TFIDF, baselines="train"), context(train)
    good = metric(real, train, ctx)
    bad = metric(real, shuffled(train), ctx)
    assert good["f1_micro"] == 1.0 and good["real_f1"] == 1.0
    assert bad["f1_micro"] < 0.8 and bad["f1_macro"] < good["f1_macro"]
    dummy = DummyClassifier(strategy="most_frequent").fit(np.zeros(len(train)), [ls[0] for ls in train.labels])
    expected = f1_score([ls[0] for ls in real.labels], dummy.predict(np.zeros(len(real))), average="micro")
    assert good["majority_f1"] == pytest.approx(expected)
    assert 0.3 < good["random_f1"] < 0.7  # a uniform guess between two classes
    assert set(good) >= set(REQUIRED["utility"])


def test_utility_eval_baselines_are_cross_fitted_without_the_training_split() -> None:
    real = sentiment(60, offset=100)
    metric, ctx = UtilityMetric(TFIDF, baselines="eval"), context(None)  # no private training split at all
    good = metric(real, sentiment(60), ctx)
    noise = metric(shuffled(real), sentiment(60), ctx)
    assert good["real_f1"] > 0.9 and good["real_f1_macro"] > 0.9
    assert noise["real_f1"] < 0.75 and noise["real_f1_macro"] < good["real_f1_macro"] - 0.2
    assert good["majority_f1"] == pytest.approx(40 / 60)  # every fold's complement is 2/3 'pos'
    assert good["f1_micro"] == 1.0 and set(good) >= set(REQUIRED["utility"])
    assert metric(real, sentiment(60), context(None, cache_dir=None)) == good  # folds seeded from ctx.seed
    for n in (1, 3):  # fewer eval documents than folds
        tiny = metric(sentiment(n, offset=100), sentiment(60), ctx)
        assert 0 <= tiny["real_f1"] <= 1 and 0 <= tiny["majority_f1"] <= 1


def test_utility_declares_train_baselines_as_diagnostics() -> None:
    train_keys = {
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
    assert UtilityMetric(TFIDF).diagnostic_keys() == train_keys and UtilityMetric(TFIDF).non_dp_keys() == frozenset()
    assert UtilityMetric(TFIDF, baselines="eval").diagnostic_keys() == frozenset()
    real = sentiment(30, offset=100)
    assert train_keys <= set(UtilityMetric(TFIDF, baselines="train")(real, sentiment(60), context(sentiment(60))))
    with pytest.raises(ConfigError, match="baselines=train needs the real training split"):
        UtilityMetric(TFIDF, baselines="train")(real, sentiment(60), context(None))


def test_utility_baseline_options_are_validated() -> None:
    with pytest.raises(ConfigError, match=r"metrics\.utility\.baselines='private'.*eval, train"):
        UtilityMetric(TFIDF, baselines="private")
    for folds in (1, 0, 2.5, True):
        with pytest.raises(ConfigError, match=r"metrics\.utility\.baseline_folds=.*>= 2"):
            UtilityMetric(TFIDF, baseline_folds=folds)  # type: ignore[arg-type]
    assert UtilityMetric(TFIDF, baseline_folds=2).baseline_folds == 2


def many_labels(n_labels: int, per_label: int, variant: int) -> Corpus:
    """Single-label documents over `n_labels` labels, each with its own marker word among shared filler words."""
    space = tuple(f"label{j:03d}" for j in range(n_labels))
    texts = [f"marker{j} shared word{(7 * j + r + variant) % 11}" for j in range(n_labels) for r in range(per_label)]
    return corpus(texts, [[space[j]] for j in range(n_labels) for _ in range(per_label)], space, name=f"many{variant}")


@pytest.mark.slow
def test_utility_is_correct_beyond_127_labels() -> None:
    # With an int8 label matrix scikit-learn's one-vs-rest wrapped the class indices at 128 and scored F1 0.0 here.
    train, real = many_labels(300, 1, 0), many_labels(300, 1, 5)
    copy = CopyGenerator()
    copy.fit(train, PrivacySpec(math.inf, 1e-6, "prv"), seed=0)
    out = UtilityMetric(TFIDF)(real, copy.sample(len(train)), context(train))
    assert out["f1_micro"] >= 0.9 and out["f1_macro"] >= 0.9 and out["real_f1"] >= 0.9
    assert out["majority_f1"] < 0.01


def test_copy_control_scores_exactly_the_real_data_row() -> None:
    rng = np.random.default_rng(3)
    words = ["great", "awful", "fine", "ok", "product", "price", "box", "late"]

    def noisy(n: int, offset: int) -> Corpus:  # labels only loosely tied to words: F1 well below 1
        labels = [["pos"] if rng.random() < 0.6 else ["neg"] for _ in range(n)]
        texts = [
            " ".join(rng.choice(words[:2] if rng.random() < 0.5 else words, 4)) + f" {offset + i}" for i in range(n)
        ]
        return corpus(texts, labels, name=f"noisy{offset}")

    train, real = noisy(80, 0), noisy(60, 1000)
    copy = CopyGenerator()
    copy.fit(train, PrivacySpec(math.inf, 1e-6, "prv"), seed=0)
    out = UtilityMetric(TFIDF)(real, copy.sample(len(train)), context(train))
    assert 0.2 < out["f1_macro"] < 0.95  # a non-trivial score, so the equality below means something
    assert (out["f1_micro"], out["f1_macro"]) == (out["real_f1"], out["real_f1_macro"])
    eval_mode = UtilityMetric(TFIDF, baselines="eval")(real, copy.sample(len(train)), context(train))
    assert eval_mode["real_f1"] != out["real_f1"]  # the cross-fitted bound is another (smaller-sample) quantity


def test_utility_counts_unknown_labels_and_missing_classes_without_crashing() -> None:
    train, real = sentiment(60), sentiment(30, offset=100)
    metric, ctx = UtilityMetric(TFIDF), context(train)
    odd = corpus(["great stuff", "awful stuff", "fine stuff", "great great"], [["pos"], ["zzz"], ["zzz"], ["pos"]])
    out = metric(real, odd, ctx)
    assert out["n_unknown_labels"] == 2 and out["n_missing_classes"] == 1 and out["n_train"] == 2
    assert out["f1_micro"] == pytest.approx(20 / 30)  # only 'pos' is ever predicted
    nothing = metric(real, corpus(["x", "y"], [["zzz"], ["zzz"]]), ctx)
    assert nothing["n_train"] == 0 and nothing["n_missing_classes"] == 2 and 0 <= nothing["f1_micro"] <= 1


def test_utility_multilabel_one_code_path() -> None:
    space = ("a", "b", "c")
    rows = [(["a"], "alpha"), (["b"], "beta"), (["a", "b"], "alpha beta"), (["c"], "gamma")] * 12
    train = corpus([f"{t} {i}" for i, (_, t) in enumerate(rows)], [ls for ls, _ in rows], space, multi=True)
    metric = UtilityMetric(TFIDF)
    out = metric(train, train, context(train))
    assert out["f1_micro"] > 0.9 and out["majority_f1"] < out["f1_micro"]
    assert out["n_missing_classes"] == 0


def test_real_f1_is_kept_on_disk_between_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    train, real = sentiment(60), sentiment(30, offset=100)
    eval_mode = UtilityMetric(TFIDF, baselines="eval")
    first = eval_mode(real, train, context(train, cache_dir=str(tmp_path)))
    [memo] = (tmp_path / "utility").glob("real_f1-*.json")
    stored = json.loads(memo.read_text())
    assert stored == {k: first[k] for k in ("real_f1", "real_f1_macro", "real_f1_eval_sd", "real_f1_macro_eval_sd")}
    memo.write_text(json.dumps({**stored, "real_f1": 0.123}))
    # eval mode is keyed by the eval corpus only: another (or no) training split hits the same memo
    assert eval_mode(real, train, context(None, cache_dir=str(tmp_path)))["real_f1"] == 0.123
    assert eval_mode(real, sentiment(9), context(sentiment(9), cache_dir=str(tmp_path)))["real_f1"] == 0.123
    # ... and mode and folds are part of the key
    assert UtilityMetric(TFIDF)(real, train, context(train, cache_dir=str(tmp_path)))["real_f1"] == 1.0
    folds3 = UtilityMetric(TFIDF, baselines="eval", baseline_folds=3)
    assert folds3(real, train, context(None, cache_dir=str(tmp_path)))["real_f1"] != 0.123
    names = {p.name for p in (tmp_path / "utility").glob("real_f1-*.json")}
    assert len(names) == 3
    # the file name is keyed by the per-user secret, so it is no digest of the private split: another secret, another
    # name
    monkeypatch.setenv("SYNBENCH_SECRET_FILE", str(tmp_path / "other.key"))
    UtilityMetric(TFIDF)(real, train, context(train, cache_dir=str(tmp_path)))
    assert len({p.name for p in (tmp_path / "utility").glob("real_f1-*.json")} - names) == 1


def test_classifier_config_errors_are_clear() -> None:
    with pytest.raises(PluginError, match="classifier plugin 'tfidf' does not take 'nope'"):
        UtilityMetric({**TFIDF, "nope": 1})
    with pytest.raises(PluginError, match=r"unknown classifier plugin 'tfidd' \(did you mean 'tfidf'\?\)"):
        UtilityMetric({"_plugin_": "tfidd"})


# ---------------------------------------------------------------- config and job


def test_metrics_group_composes_and_builds() -> None:
    cfg = compose_config(["classifier=bert_large"])  # the default list: every built-in metric
    assert set(cfg.metrics) == {"utility", "mauve", "entities", "length", "labels"}
    classifier = cfg.metrics.utility.classifier
    assert (classifier._plugin_, classifier.pretrained, classifier.epochs, classifier.lr) == (
        "transformer",
        "bert-large-uncased",
        5,
        2e-5,
    )
    utility = compose_config(["metrics=[utility]"]).metrics.utility
    # the paper's upper bound by default: the classifier trained on the real training split
    assert (utility.classifier._plugin_, utility.baselines, utility.baseline_folds) == ("tfidf", "train", 5)
    assert "real_f1" in registry.create(Metric, utility).diagnostic_keys()
    eval_mode = compose_config(["metrics=[utility]", "metrics.utility.baselines=eval"]).metrics.utility
    assert registry.create(Metric, eval_mode).diagnostic_keys() == frozenset()
    for name in ("mauve", "entities", "length", "labels"):
        assert registry.create(Metric, cfg.metrics[name]).section == "fidelity"


def test_job_writes_required_keys(tmp_path: Path, tiny_dataset: list[str]) -> None:
    run_cli(
        [
            *tiny_dataset,
            "generator=copy",
            "eps=inf",
            "tracking=none",
            f"output_root={tmp_path / 'out'}",
            "metrics=[utility,mauve,entities,length,labels]",
            "metrics.mauve.kmeans_seeds=2",
        ],
        cwd=tmp_path,
    )
    [results_file] = list((tmp_path / "out").rglob("results.json"))
    results = json.loads(results_file.read_text())
    for section, keys in REQUIRED.items():
        for key in keys:
            assert isinstance(results[section][key], (int, float)), f"{section}.{key}"
    # the copy control trains on the training split in order: exactly the real-data row
    assert results["utility"]["real_f1"] == results["utility"]["f1_micro"]
    assert results["utility"]["real_f1_macro"] == results["utility"]["f1_macro"]
    # the train baselines are written and named, as the audit's figures are
    assert [k for k in results["non_dp_outputs"] if k.startswith("utility.")] == [
        "utility.majority_f1",
        "utility.majority_f1_macro",
        "utility.matched_real_f1",
        "utility.matched_real_f1_macro",
        "utility.n_matched_repeats",
        "utility.real_f1",
        "utility.real_f1_eval_sd",
        "utility.real_f1_macro",
        "utility.real_f1_macro_eval_sd",
    ]
    # the positive control at the full training size and its label plan is the training split itself: the real row
    utility = results["utility"]
    assert (utility["matched_real_f1"], utility["matched_real_f1_macro"]) == (
        utility["real_f1"],
        utility["real_f1_macro"],
    )
    assert utility["n_matched_repeats"] == 0
    # per-class F1 and eval support for every label
    assert set(utility["f1_per_class"]) == set(utility["support"]) and len(utility["support"]) >= 2
    assert {"metric_utility_s", "metric_mauve_s"} <= set(results["timing"])
    assert list((tmp_path / "out" / "cache").glob("*.npy"))  # embeddings kept on local disk for the next job


@pytest.mark.slow
def test_transformer_classifier_learns_offline_minilm() -> None:
    from synbench.metrics.transformer import TransformerClassifier

    train, real = sentiment(48), sentiment(24, offset=100)
    metric = UtilityMetric(
        {"_plugin_": "transformer", "epochs": 4, "lr": 1e-4, "batch_size": 8, "max_length": 32}, baselines="train"
    )  # one real-data training instead of one per fold
    assert isinstance(metric.classifier, TransformerClassifier)
    out = metric(real, train, context(train))
    assert out["f1_micro"] > out["majority_f1"]
    space = ("a", "b")
    multi = corpus(
        [f"{'alpha' if i % 2 else 'beta'} {i}" for i in range(24)],
        [["a"] if i % 2 else ["a", "b"] for i in range(24)],
        space,
        multi=True,
    )
    scores = metric.classifier.fit_predict(
        multi.texts, np.array([[1, i % 2 == 0] for i in range(24)], dtype=np.int8), multi.texts, True, 0
    )
    assert scores.shape == (24, 2) and ((0 <= scores) & (scores <= 1)).all()


# ---------------------------------------------------------------- per-class results, bootstrap, positive control


def test_per_class_f1_and_support_match_scikit_learn() -> None:
    rng = np.random.default_rng(0)
    truth = np.eye(4, dtype=np.int64)[rng.integers(0, 3, 50)]  # label d never occurs in truth
    predicted = np.eye(4, dtype=np.int64)[rng.integers(0, 4, 50)]
    found = per_class_f1(truth, predicted, ("a", "b", "c", "d"))
    expected = f1_score(truth, predicted, average=None, zero_division=0)
    assert list(found) == ["a", "b", "c", "d"] and np.allclose(list(found.values()), expected)
    real, synthetic = sentiment(30, offset=100), sentiment(60)
    utility = UtilityMetric(TFIDF)(real, synthetic, context(synthetic))
    assert utility["support"] == {label: sum(label in ls for ls in real.labels) for label in real.label_space}
    assert set(utility["f1_per_class"]) == set(real.label_space)
    assert np.mean(list(utility["f1_per_class"].values())) == pytest.approx(utility["f1_macro"])


@pytest.mark.slow
def test_the_eval_bootstrap_sd_agrees_with_resampling_the_eval_documents_by_hand() -> None:
    """The vectorised bootstrap against an independent one: 2,000 resamples of the documents through scikit-learn,
    another seed; the two SDs of macro (and micro) F1 agree within 10%."""
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 5, 120)
    truth = np.eye(5, dtype=np.int64)[labels]
    right = rng.random(120) < 0.6
    predicted = np.eye(5, dtype=np.int64)[np.where(right, labels, rng.integers(0, 5, 120))]
    sd_micro, sd_macro = bootstrap_f1_sd(truth, predicted, 2000, seed=0)
    by_hand = [f1_micro_macro(truth[rows], predicted[rows]) for rows in rng.integers(0, 120, (2000, 120))]
    assert sd_micro == pytest.approx(np.std([m for m, _ in by_hand], ddof=1), rel=0.1)
    assert sd_macro == pytest.approx(np.std([m for _, m in by_hand], ddof=1), rel=0.1)
    assert bootstrap_f1_sd(truth, truth, 100, seed=0) == (0.0, 0.0)  # perfect predictions on every resample


def test_matched_rows_follow_the_plan_and_repeat_only_where_the_split_is_short() -> None:
    train = [("a",)] * 5 + [("b",)] * 2 + [("a", "b")] * 3
    wanted = [("a",)] * 4 + [("b",)] * 5 + [("c",)] * 2  # b: 2 in the split for 5 wanted; c: none
    rows = matched_rows(train, wanted, np.random.default_rng(0))
    picked = Counter(train[i] for i in rows)
    assert picked == {("a",): 4, ("b",): 5}  # c is skipped, a set the split never holds
    assert len(set(i for i in rows if train[i] == ("a",))) == 4  # no repeat where the split has enough
    assert set(i for i in rows if train[i] == ("b",)) == {5, 6}  # both b documents, each at least twice


def test_the_default_classifier_weighs_classes_and_refuses_an_unknown_weighting() -> None:
    from synbench.metrics.classifiers import TfidfClassifier

    assert TfidfClassifier().class_weight == "balanced" and compose_config().classifier.class_weight == "balanced"
    with pytest.raises(ConfigError, match=r"classifier\.class_weight='heavy' is unknown; choose balanced or null"):
        TfidfClassifier(class_weight="heavy")
    # a skewed training set: the unweighted fit predicts the big class more often than the balanced one
    texts = [f"common words {i % 7} alpha" for i in range(40)] + ["common words beta"] * 4
    y = np.array([[1, 0]] * 40 + [[0, 1]] * 4, dtype=np.int64)
    probe = ["common words beta alpha"] * 5
    balanced = TfidfClassifier().fit_predict(texts, y, probe, False, 0)
    plain = TfidfClassifier(class_weight=None).fit_predict(texts, y, probe, False, 0)
    assert balanced[:, 1].mean() > plain[:, 1].mean()
