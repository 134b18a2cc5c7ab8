"""The DP label-set plan (`synbench.dp.label_sets`): sensitivity, threshold, accounting, exactness, utility."""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from scipy.special import ndtr

from synbench.core import schema
from synbench.core.base import MetricContext
from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import ConfigError
from synbench.core.privacy import NoiseSource, gdp_epsilon, noisy_label_histogram
from synbench.data.files import FileDataset
from synbench.dp import label_sets
from synbench.dp.label_sets import LabelSetBudget, LabelSetOptions, LabelSetRelease
from synbench.metrics.utility import UtilityMetric

FIXTURES = Path(__file__).parent / "fixtures"
SPACE = ("cardiac", "renal", "respiratory", "diabetes")


@pytest.fixture(scope="module")
def fixture() -> tuple[Corpus, Corpus]:
    """The multi-label fixture: 60 train / 30 eval clinical notes, 9 label sets over 4 labels, 1 to 3 labels each."""
    splits = FileDataset(
        name="ml",
        train=str(FIXTURES / "multilabel_train.jsonl"),
        eval=str(FIXTURES / "multilabel_eval.jsonl"),
        multi_label=True,
        label_space=list(SPACE),
    ).load(0)
    return splits.train, splits.eval


def rng() -> np.random.Generator:
    return np.random.default_rng(0)


# --- the mechanism ---------------------------------------------------------------------------------


def test_one_document_changes_one_set_count_by_exactly_one(fixture: tuple[Corpus, Corpus]) -> None:
    train, _ = fixture
    full = Counter(label_sets.set_counts(train))
    sets = label_sets.label_sets(train)
    for i in range(len(train)):
        rest = Counter(label_sets.set_counts(train.subset([j for j in range(len(train)) if j != i])))
        assert full - rest == Counter({sets[i]: 1}) and not rest - full
    # the set is a set: the order a record lists its labels in, and repeats, do not make another one
    extra = Corpus.build(["x"], [["renal", "cardiac", "renal"]], SPACE, multi_label=True)
    assert label_sets.set_counts(extra) == {("cardiac", "renal"): 1}


def test_a_set_held_by_one_document_is_released_with_probability_delta_select() -> None:
    # analytic: P(1 + N(0, sigma^2) > tau) = delta_select, for a calibrated budget and a hand-made one
    for budget in (LabelSetOptions().calibrate(0.2, 1 / 600**2, True), LabelSetBudget(2.0, 1, 0.05, "none")):
        assert 1 - ndtr((budget.threshold - 1) / budget.sigma) == pytest.approx(budget.delta_select, rel=1e-9)
    # Monte Carlo: 1023 documents, each alone in its set (every non-empty subset of 10 labels), 10 seeded releases
    space = tuple(f"l{i}" for i in range(10))
    subsets = [list(c) for k in range(1, 11) for c in combinations(space, k)]
    corpus = Corpus.build(["x"] * len(subsets), subsets, space, multi_label=True)
    budget = LabelSetBudget(2.0, 1, 0.05, "none")
    released = sum(len(label_sets.release(corpus, budget, NoiseSource(seed=s)).sets) for s in range(10))
    trials = 10 * len(subsets)
    se = math.sqrt(0.05 * 0.95 / trials)
    assert abs(released / trials - 0.05) < 4 * se  # at delta_select, not below it by accident of a wrong threshold


def test_selection_without_delta_is_refused() -> None:
    corpus = Corpus.build(["x"], [["a", "b"]], ("a", "b"), multi_label=True)
    with pytest.raises(ValueError, match="delta_select"):
        label_sets.release(corpus, LabelSetBudget(2.0, 1, 0.0, "none"), NoiseSource(seed=0))


def test_accounting_composes_gaussian_steps_and_splits_delta() -> None:
    delta = 1e-6
    multi = LabelSetOptions().calibrate(1.0, delta, True)
    assert multi.gaussians == 2 and multi.delta_select == pytest.approx(1e-7)
    assert multi.history() == [(multi.sigma, 1.0, 2)]
    # the two steps meet eps exactly at delta - delta_select, so the total delta is the job's
    assert gdp_epsilon(math.sqrt(2) / multi.sigma, delta - multi.delta_select) == pytest.approx(1.0, rel=1e-6)
    one = LabelSetOptions(tail="none", delta_share=0.5).calibrate(1.0, delta, True)
    assert one.gaussians == 1 and one.delta_select == pytest.approx(5e-7) and one.sigma < multi.sigma
    single = LabelSetOptions().calibrate(1.0, delta, False)
    assert (single.gaussians, single.delta_select, single.tail) == (1, 0.0, "none")
    exact = LabelSetOptions().calibrate(math.inf, delta, True)
    assert (exact.sigma, exact.delta_select, exact.history()) == (0.0, 0.0, [])


def test_single_label_release_is_the_noisy_label_histogram() -> None:
    corpus = Corpus.build(["x"] * 30, [["a"]] * 20 + [["c"]] * 10, ("a", "b", "c"))
    budget = LabelSetOptions().calibrate(1.0, 1e-4, False)
    out = label_sets.release(corpus, budget, NoiseSource(seed=3))
    assert out.sets == (("a",), ("b",), ("c",)) and out.marginals is None  # every public label, no selection
    np.testing.assert_array_equal(out.weights, noisy_label_histogram(corpus, budget.sigma, NoiseSource(seed=3)))


def test_noise_is_secret_unless_seeded(fixture: tuple[Corpus, Corpus]) -> None:
    train, _ = fixture
    budget = LabelSetOptions().calibrate(8.0, 1e-4, True)
    assert label_sets.release(train, budget, NoiseSource()) != label_sets.release(train, budget, NoiseSource())
    assert label_sets.release(train, budget, NoiseSource(seed=1)) == label_sets.release(
        train, budget, NoiseSource(seed=1)
    )


def test_eps_inf_gives_the_exact_label_set_distribution(fixture: tuple[Corpus, Corpus]) -> None:
    train, _ = fixture
    out = label_sets.release(train, LabelSetOptions().calibrate(math.inf, 1e-4, True), NoiseSource())
    exact = Counter(label_sets.label_sets(train))
    assert dict(zip(out.sets, out.weights)) == exact and out.head_share() == 1.0
    assert Counter(label_sets.plan(len(train), out, SPACE, True, rng())) == exact
    assert Counter(label_sets.plan(2 * len(train), out, SPACE, True, rng())) == {s: 2 * k for s, k in exact.items()}


# --- turning a release into a plan ----------------------------------------------------------------


def test_plan_spreads_the_head_by_weight_and_draws_the_tail_from_marginals() -> None:
    space = ("a", "b", "c")
    # released: ("a", "b") with 60 of N = 100; marginals = its share (60/sqrt 2 on a and b) + 20 on a and 20 on c
    head = 60 / math.sqrt(2)
    out = LabelSetRelease((("a", "b"),), (60.0,), 100, (head + 20, head, 20.0))
    plan = label_sets.plan(100, out, space, True, rng())
    counts = Counter(plan)
    assert counts[("a", "b")] == 60 and len(plan) == 100
    assert set(counts) - {("a", "b")} <= {("a",), ("c",), ("a", "c")}  # tail rates 0.5, 0, 0.5: never b, never empty
    assert plan[:60] == [("a", "b")] * 60  # the head first, then the tail grouped by set in label-space order
    assert plan[60:] == sorted(plan[60:], key=lambda s: [space.index(x) for x in s])
    nothing = LabelSetRelease((), (), 100, (40.0, 30.0, 0.0))  # no set passed the threshold: all from the marginals
    assert {s for s in label_sets.plan(50, nothing, space, True, rng())} <= {("a",), ("b",), ("a", "b")}
    bare = LabelSetRelease((), (), 100, None)  # no set and no tail: the public uniform prior
    assert Counter(label_sets.plan(6, bare, space, True, rng())) == {("a",): 2, ("b",): 2, ("c",): 2}


def test_uniform_prior_is_one_label_per_document() -> None:
    out = label_sets.uniform(("a", "b", "c"))
    assert Counter(label_sets.plan(7, out, ("a", "b", "c"), True, rng())) == {("a",): 3, ("b",): 2, ("c",): 2}
    assert out.details()["label_prior"] == "uniform"


def test_label_counts_are_followed_and_checked() -> None:
    out = label_sets.uniform(("a", "b"))
    assert label_sets.plan(3, out, ("a", "b"), True, rng(), {("a", "b"): 2, ("b",): 1}) == [
        ("a", "b"),
        ("a", "b"),
        ("b",),
    ]
    for counts, multi, match in [
        ({("a",): 3}, True, "add up to n=4"),
        ({("a",): 5, ("b",): -1}, True, "non-negative"),
        ({("z",): 4}, True, "outside the label space"),
        ({("a", "b"): 4}, False, "single-label"),
        ({(): 4}, True, "not a label set"),
    ]:
        with pytest.raises(ConfigError, match=match):
            label_sets.plan(4, out, ("a", "b"), multi, rng(), counts)


def test_release_round_trips_through_json_and_config_is_checked() -> None:
    out = LabelSetRelease((("a", "b"), ("c",)), (12.5, 7.25), 40, (1.0, 2.0, 3.0))
    assert LabelSetRelease.from_json(out.to_json()) == out
    assert schema.typed(LabelSetOptions, {"delta_share": 0.2, "tail": "none"}, "x") == LabelSetOptions(0.2, "none")
    for node, match in [
        ({"delta_share": 1.0}, "delta_share"),
        ({"tail": "sets"}, "tail"),
        ({"share": 0.1}, "^generator.label_sets.share: Key 'share' not in 'LabelSetOptions'"),
    ]:
        with pytest.raises(ConfigError, match=match):
            schema.typed(LabelSetOptions, node, "generator.label_sets")


# --- utility: the copy-like oracle ----------------------------------------------------------------


def oracle(train: Corpus, plan: list[Labels]) -> Corpus:
    """A generator that writes real training documents with the planned label sets.

    Each planned set gets the next real document that carries all of its labels
    (for a one-label plan on multi-label data: any document with that label),
    labelled with the planned set, as a perfect label-conditioned generator would;
    a set no document carries (drawn from the tail's marginals) gets one
    document per label, joined.
    """
    sets = label_sets.label_sets(train)
    used: Counter[Labels] = Counter()
    texts = []
    for labels in plan:
        pool = [i for i, s in enumerate(sets) if set(labels) <= set(s)]
        parts = (
            [pool[used[labels] % len(pool)]]
            if pool
            else [next(i for i, s in enumerate(sets) if label in s) for label in labels]
        )
        texts.append(" ".join(train.texts[i] for i in parts) + f" #{len(texts)}")
        used[labels] += 1
    return Corpus.build(texts, plan, train.label_space, multi_label=True, name="oracle")


def test_set_plan_beats_the_single_label_plan_on_a_multi_label_task(fixture: tuple[Corpus, Corpus]) -> None:
    """The same DP budget on labels: label sets carry the co-occurrences a one-label-per-document plan cannot. Scored
    with the unweighted classifier, whose per-label models follow the training plan's label frequencies (what the
    plan changes); balanced class weights make up much of a skewed plan's loss, which is their purpose."""
    train, real = fixture
    n, delta, noise = 120, 1 / len(train) ** 2, NoiseSource(seed=7)
    sets = label_sets.release(train, LabelSetOptions().calibrate(8.0, delta, True), noise)
    assert any(len(s) > 1 for s in sets.sets)
    single_sigma = LabelSetOptions().calibrate(8.0, delta, False).sigma  # the former plan: a noisy per-label histogram
    single = LabelSetRelease(
        tuple((label,) for label in SPACE), tuple(noisy_label_histogram(train, single_sigma, noise)), len(train)
    )
    utility = UtilityMetric({"_plugin_": "tfidf", "name": "tfidf", "class_weight": None})
    ctx = MetricContext(seed=0, job_dir=".", train=train)
    with_sets = utility(real, oracle(train, label_sets.plan(n, sets, SPACE, True, rng())), ctx)
    with_single = utility(real, oracle(train, label_sets.plan(n, single, SPACE, True, rng())), ctx)
    assert with_sets["f1_micro"] > with_single["f1_micro"] + 0.1
    assert with_sets["f1_macro"] > with_single["f1_macro"]
