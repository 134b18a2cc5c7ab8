"""The conformance kit `synbench.testing`: it passes conforming plugins and catches broken ones by name.

The broken generators below are small but realistic: each is the honest
`NoisyUnigram` (a noisy label histogram and a noisy label x word matrix over a
public vocabulary, calibrated and accounted with `synbench.core.privacy`) with one
mistake a plugin author could make.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable, Mapping

import numpy as np
import pytest
from omegaconf import OmegaConf

from conftest import compose_config
from leaky_generator import VerbatimCopier
from synbench.core.base import Attack, FitReport, Generator, Metric, MetricContext, ModelAttack, ModelSignals
from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import SynBenchError
from synbench.core.privacy import PrivacySpec, allocate, gaussian_sigma, gdp_epsilon
from synbench.core.registry import create
from synbench.data.files import FileDataset
from synbench.generators.copy import CopyGenerator
from synbench.testing import (
    ConformanceError,
    check_attack,
    check_dataset,
    check_generator,
    check_metric,
    check_model_attack,
    generator_checks,
    parametrize_with_checks,
    public_corpus,
)
from synbench.testing.corpora import SENTINEL_PATTERN

VOCABULARY = tuple(sorted({w for part in range(6) for t in public_corpus(part=part).texts for w in t.split()}))
COLUMN = {w: i for i, w in enumerate(VOCABULARY)}
DOC_WORDS = 8


class NoisyUnigram(Generator):
    """Honest: two Gaussian mechanisms of L2 sensitivity 1 (label histogram, label x word matrix), mu-GDP accounting."""

    public_details = frozenset({"sigma"})
    calibrated_for = 2  # mechanisms the noise is calibrated for; both always run

    def __init__(self) -> None:
        self.model: tuple[Corpus, np.ndarray, np.ndarray, np.random.Generator] | None = None

    def delta(self, privacy: PrivacySpec, n: int) -> float:
        return privacy.delta

    def noise(self, privacy: PrivacySpec, seed: int) -> np.random.Generator:
        return privacy.noise.numpy("noisy_unigram")

    def details(self, corpus: Corpus, sigma: float) -> dict[str, Any]:
        return {"sigma": sigma}

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        delta = self.delta(privacy, len(corpus))
        sigma = gaussian_sigma(privacy.epsilon, delta, self.calibrated_for)
        rows = corpus.label_matrix().astype(float)
        labels = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).sum(axis=0)
        words = np.zeros((len(corpus.label_space), len(VOCABULARY)))
        for text, row in zip(corpus.texts, rows):
            cols = sorted({COLUMN[w] for w in text.split() if w in COLUMN})
            words[np.ix_(row > 0, cols)] += 1.0 / math.sqrt(row.sum() * max(len(cols), 1))
        rng = self.noise(privacy, seed)
        labels, words = (np.clip(x + rng.normal(0.0, sigma, x.shape), 0.0, None) for x in (labels, words))
        self.model = (corpus, labels, words, np.random.default_rng(seed))
        spent = gdp_epsilon(math.sqrt(2) / sigma, delta) if sigma > 0 else math.inf
        return FitReport(epsilon_spent=spent, delta=delta, details=self.details(corpus, sigma))

    def plan(self, n: int, label_counts: Mapping[Labels, int] | None) -> Mapping[Labels, int]:
        assert self.model is not None
        corpus, labels, _, _ = self.model
        if label_counts is not None:
            return label_counts
        return {(label,): int(k) for label, k in zip(corpus.label_space, allocate(n, labels))}

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        if self.model is None:
            raise SynBenchError("sample() called before fit()")
        corpus, _, words, rng = self.model
        texts: list[str] = []
        out_labels: list[Labels] = []
        for labelset, k in self.plan(n, label_counts).items():
            weights = words[[corpus.label_space.index(x) for x in labelset]].mean(axis=0)
            probs = weights / weights.sum() if weights.sum() > 0 else None
            texts += [" ".join(rng.choice(VOCABULARY, size=DOC_WORDS, p=probs)) for _ in range(k)]
            out_labels += [labelset] * k
        return Corpus.build(texts, out_labels, corpus.label_space, multi_label=corpus.multi_label, name="noisy-unigram")


class Overspends(NoisyUnigram):
    """Calibrates the noise as if only one mechanism ran, and honestly reports the composition of both."""

    calibrated_for = 1


class OwnDelta(NoisyUnigram):
    """Picks its own delta (1/N, a common default) instead of the job's."""

    def delta(self, privacy: PrivacySpec, n: int) -> float:
        return 1.0 / n


class FixedSeedNoise(NoisyUnigram):
    """Draws its privacy noise from the job's published seed."""

    def noise(self, privacy: PrivacySpec, seed: int) -> np.random.Generator:
        return np.random.default_rng(seed)


class LeaksVocabulary(NoisyUnigram):
    """Reports the words it saw, a debugging aid that releases private words."""

    public_details = frozenset({"sigma", "vocabulary"})

    def details(self, corpus: Corpus, sigma: float) -> dict[str, Any]:
        return {"sigma": sigma, "vocabulary": sorted({w for t in corpus.texts for w in t.split()})}


class UndeclaredDetails(NoisyUnigram):
    """Reports the raw label counts without declaring them (the core would drop them, with a warning)."""

    def details(self, corpus: Corpus, sigma: float) -> dict[str, Any]:
        return {"sigma": sigma, "label_counts": corpus.label_matrix().sum(axis=0).tolist()}


class IgnoresLabelCounts(NoisyUnigram):
    """Always follows its own noisy label histogram."""

    def plan(self, n: int, label_counts: Mapping[Labels, int] | None) -> Mapping[Labels, int]:
        return super().plan(n, None)


class UnseededSampling(NoisyUnigram):
    """Samples text with OS entropy, so a replication noise seed cannot reproduce a run."""

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        if self.model is not None:
            self.model = (*self.model[:3], np.random.default_rng())
        return super().sample(n, label_counts)


@parametrize_with_checks([NoisyUnigram])
def test_an_honest_generator_passes_each_named_check(check: Callable[[], None]) -> None:
    check()


def test_the_named_checks_and_their_pytest_ids() -> None:
    assert [name for name, _ in generator_checks(NoisyUnigram)] == [
        "api",
        "fit-sample",
        "fit-sample-multi-label",
        "no-dp",
        "sentinels",
        "noise",
    ]
    assert [name for name, _ in generator_checks(NoisyUnigram, multi_label=False, audit=True)][-1] == "audit"
    [mark] = parametrize_with_checks([NoisyUnigram, lambda: NoisyUnigram()]).mark.args[1:]
    assert [p.id for p in mark][:2] == ["NoisyUnigram-api", "NoisyUnigram-fit-sample"] and mark[
        -1
    ].id == "generator1-noise"
    with pytest.raises(ValueError, match="epsilon"):
        list(generator_checks(NoisyUnigram, epsilon=math.inf))


def test_the_kit_fails_a_generator_that_releases_half_its_documents_verbatim() -> None:
    """Secret noise, claimed budget, label_counts, declared details: only its sample() output gives it away."""
    with pytest.raises(ConformanceError) as info:
        check_generator(VerbatimCopier)
    assert info.value.contracts == ["sample-leak"]
    assert not SENTINEL_PATTERN.search(str(info.value))  # how many sentinels leaked, never which
    checks = dict(generator_checks(VerbatimCopier))
    for name in ("api", "fit-sample", "fit-sample-multi-label", "no-dp", "noise"):
        checks[name]()  # each of these passes on its own: they never read what sample() writes
    with pytest.raises(ConformanceError, match=r"\[sample-leak\] sample\(36\) .* wrote \d+ of the 36 random"):
        checks["sentinels"]()


def test_the_canary_audit_bounds_a_verbatim_copier_above_its_claim_and_passes_an_honest_generator() -> None:
    # At eps=1: the copier's bound with the default 1000 canaries ranged 2.5 to 3.9 over 11 draws (3.9 the most
    # 500 members allow at the grid's Bonferroni level), so the test cannot fail by chance.
    audit = dict(generator_checks(VerbatimCopier, audit=True, epsilon=1.0))["audit"]
    with pytest.raises(ConformanceError, match=r"\[audit\] a one-run canary audit .* bounds epsilon below by") as info:
        audit()
    assert info.value.contracts == ["audit"]
    dict(generator_checks(NoisyUnigram, audit=True))["audit"]()


@pytest.mark.parametrize(
    "broken, contract",
    [
        (Overspends, "budget-epsilon"),
        (OwnDelta, "budget-delta"),
        (FixedSeedNoise, "noise-source"),
        (LeaksVocabulary, "private-text"),
        (UndeclaredDetails, "public-details"),
        (IgnoresLabelCounts, "label-counts"),
        (UnseededSampling, "replication"),
    ],
)
def test_the_kit_catches_a_broken_generator(broken: type[Generator], contract: str) -> None:
    with pytest.raises(ConformanceError) as info:
        check_generator(broken)
    assert info.value.contracts == [contract]
    message = str(info.value)
    assert (
        f"generator {broken.__qualname__} ({__name__})" in message and f"[{contract}]" in message and "fix:" in message
    )
    assert not SENTINEL_PATTERN.search(message)  # the message names where private text leaked, never the text


def test_copy_passes_as_a_built_in_control_and_fails_as_a_private_generator() -> None:
    check_generator(CopyGenerator)  # a built-in control, known by class identity
    with pytest.raises(ConformanceError, match="built-in controls") as info:
        check_generator(CopyGenerator, private=True)
    assert info.value.contracts == ["budget-epsilon", "sample-leak"]


def test_sample_before_fit_must_be_a_synbench_error() -> None:
    class Raw(NoisyUnigram):
        def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
            if self.model is None:
                raise RuntimeError("not fitted")
            return super().sample(n, label_counts)

    with pytest.raises(ConformanceError, match=r"\[sample-before-fit\] .* raised RuntimeError") as info:
        check_generator(Raw, multi_label=False)
    assert info.value.contracts == ["sample-before-fit"]


def test_a_plugin_exception_is_chained_and_names_the_call() -> None:
    class NoMultiLabel(NoisyUnigram):
        def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
            if corpus.multi_label:
                raise ValueError("multi-label data is not supported")
            return super().fit(corpus, privacy, seed)

    check_generator(NoMultiLabel, multi_label=False)
    with pytest.raises(
        ConformanceError, match=r"\[fit\] fit\(\) on corpus 'synbench-testing-multi-0' .* raised ValueError"
    ) as info:
        check_generator(NoMultiLabel)
    assert isinstance(info.value.__cause__, ValueError)


def config_node(group: str, option: str) -> dict[str, Any]:
    """The config node a job gets for `<group>=<option>`, as Hydra composes it."""
    listed = group in ("metrics", "model_attacks", "attack")  # list groups: one node per chosen option
    task = ["task=model_audit"] if group == "model_attacks" else []  # the group only that task's defaults hold
    cfg = compose_config([*task, f"{group}=[{option}]"] if listed else [f"{group}={option}"])
    value = OmegaConf.to_container(cfg[group], resolve=True)
    assert isinstance(value, dict)
    return value[option] if listed else value


def test_check_metric_passes_the_length_metric() -> None:
    check_metric(lambda: create(Metric, config_node("metrics", "length")))


class TrainLength(Metric):
    """Reports a statistic of the private split as if it were a fidelity value."""

    def __call__(self, real: Corpus, synthetic: Corpus, ctx: MetricContext) -> dict[str, float]:
        assert ctx.train is not None
        return {"train_chars": float(sum(map(len, ctx.train.texts))), "n_synthetic": len(synthetic)}


class Jittery(Metric):
    section = "quality"

    def __call__(self, real: Corpus, synthetic: Corpus, ctx: MetricContext) -> dict[str, float]:
        return {"score": float(np.random.default_rng().random())}


@pytest.mark.parametrize(
    "broken, contracts", [(TrainLength, ["private-split"]), (Jittery, ["declaration", "deterministic"])]
)
def test_check_metric_catches_broken_metrics(broken: Callable[[], Metric], contracts: list[str]) -> None:
    with pytest.raises(ConformanceError) as info:
        check_metric(broken)
    assert info.value.contracts == contracts


def test_check_attack_passes_the_ngram_attack() -> None:
    check_attack(lambda: create(Attack, config_node("attack", "ngram")))


class Inverted(Attack):
    """Scores by how unlike the release a target is: the audit would read it upside down."""

    def score(self, targets: Any, synthetic: Corpus, references: Any) -> np.ndarray:
        seen = {w for t in synthetic.texts for w in t.split()}
        return np.array([sum(w not in seen for w in t.split()) for t in targets], dtype=float)


class Positional(Attack):
    def score(self, targets: Any, synthetic: Corpus, references: Any) -> np.ndarray:
        return np.arange(len(targets), dtype=float)[::-1]


@pytest.mark.parametrize("broken, contracts", [(Inverted, ["direction"]), (Positional, ["target-order"])])
def test_check_attack_catches_broken_attacks(broken: Callable[[], Attack], contracts: list[str]) -> None:
    with pytest.raises(ConformanceError) as info:
        check_attack(broken)
    assert info.value.contracts == contracts


@pytest.mark.parametrize(
    "option, overrides",
    [("logits", {}), ("lira", {}), ("lira", {"online": False}), ("rmia", {}), ("rmia", {"online": False})],
)
def test_check_model_attack_passes_the_model_attacks(option: str, overrides: dict[str, Any]) -> None:
    check_model_attack(lambda: create(ModelAttack, {**config_node("model_attacks", option), **overrides}))


def test_check_attack_points_a_model_attack_to_its_own_check() -> None:
    with pytest.raises(ConformanceError, match="check_model_attack") as info:
        check_attack(lambda: create(ModelAttack, config_node("model_attacks", "lira")))
    assert info.value.contracts == ["kind"]


class Underfit(ModelAttack):
    """Scores by how little the model trusts an example: the model audit would read it upside down."""

    def score_models(self, signals: ModelSignals) -> np.ndarray:
        return -signals.target.mean(axis=1)


class Ranked(ModelAttack):
    """Scores by position in the list, not by the example."""

    def score_models(self, signals: ModelSignals) -> np.ndarray:
        return np.linspace(1.0, 0.0, len(signals.target))


class PerLabel(ModelAttack):
    """Returns one score per example and label column instead of one per example."""

    def score_models(self, signals: ModelSignals) -> np.ndarray:
        return signals.target


@pytest.mark.parametrize(
    "broken, contracts", [(Underfit, ["direction"]), (Ranked, ["example-order"]), (PerLabel, ["scores"])]
)
def test_check_model_attack_catches_broken_attacks(broken: Callable[[], ModelAttack], contracts: list[str]) -> None:
    with pytest.raises(ConformanceError) as info:
        check_model_attack(broken)
    assert info.value.contracts == contracts


def files_dataset(overrides: list[str], drop: str | None = None) -> Callable[[], FileDataset]:
    """A `files` dataset factory from the `tiny_dataset` overrides (`dataset.<key>=<value>`), without key `drop`."""
    keys = dict(arg.removeprefix("dataset.").split("=", 1) for arg in overrides if arg.startswith("dataset."))
    keys.pop(drop or "", None)
    return lambda: FileDataset(**keys)


def test_check_dataset_passes_the_files_dataset(tiny_dataset: list[str]) -> None:
    check_dataset(files_dataset(tiny_dataset))
    check_dataset(files_dataset(tiny_dataset, drop="eval"))  # no eval file: a seeded hold-out


def test_check_dataset_catches_an_unseeded_split(tiny_dataset: list[str]) -> None:
    class Unseeded(FileDataset):
        def load(self, seed: int) -> Any:  # a hold-out drawn afresh each load
            return FileDataset.load(replace(self, split_seed=int(np.random.default_rng().integers(1 << 30))), seed)

    keys = vars(files_dataset(tiny_dataset, drop="eval")())
    with pytest.raises(ConformanceError) as info:
        check_dataset(lambda: Unseeded(**keys))
    assert info.value.contracts == ["deterministic"]


@pytest.mark.slow
@pytest.mark.parametrize("family", ["dpgen", "augpe", "dpdiffusion", "invisibleink"])
def test_the_canary_audit_passes_the_dp_generators(family: str, tiny_model: dict[str, Any]) -> None:
    """Each DP family at the kit sizes of its own conformance test: the one-run bound stays within its epsilon."""
    from synbench.generators.dpdiffusion import DPDiffusionGenerator
    from test_augpe import tiny_augpe
    from test_dpdiffusion import KIT
    from test_dpgen import generator as dpgen

    factories: dict[str, Callable[[], Generator]] = {
        "dpgen": lambda: dpgen(tiny_model, max_seq_len=48, max_new_tokens=6, sample_batch_size=32),
        "augpe": lambda: tiny_augpe(tiny_model),
        "dpdiffusion": lambda: DPDiffusionGenerator(**KIT),
        "invisibleink": lambda: create(
            Generator,
            {
                "_plugin_": "invisibleink",
                "model": tiny_model,
                "batch_size": 2,
                "max_new_tokens": 3,
                "max_context_tokens": 8,
                "top_k": 8,
            },
        ),
    }
    dict(generator_checks(factories[family], audit=True))["audit"]()
