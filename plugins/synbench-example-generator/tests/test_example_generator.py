"""Tests of `DPUnigramGenerator`; they need the plugin installed
(`pip install -e plugins/synbench-example-generator`)."""

from __future__ import annotations

import inspect
import math
from collections import Counter
from importlib.resources import files
from typing import Callable

import numpy as np
import pytest
import yaml
from synbench_example_generator.generator import DPUnigramGenerator, public_vocabulary

from synbench.api import ConfigError, Corpus, Generator, NoiseSource, PrivacySpec
from synbench.api import create_plugin as create
from synbench.testing import parametrize_with_checks

POS = ["the movie was great and fun", "a great film with a fun plot", "i loved the great acting"]
NEG = ["the food was cold and bad", "bad service and a cold room", "i hated the bad smell"]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.build(POS * 5 + NEG * 5, [["pos"]] * 15 + [["neg"]] * 15, ["pos", "neg"], name="tiny")


def spec(eps: float, noise_seed: int | None = None, delta: float = 1e-4) -> PrivacySpec:
    return PrivacySpec(eps, delta, noise=NoiseSource(seed=noise_seed), accountant="prv")


def words(texts: tuple[str, ...]) -> set[str]:
    return {w for t in texts for w in t.split()}


def test_config_file_matches_constructor() -> None:
    """The shipped YAML builds the generator through the registry, key for key."""
    node = yaml.safe_load(files("synbench_example_generator.conf").joinpath("generator/example.yaml").read_text())
    assert set(node) - {"_plugin_"} == set(inspect.signature(DPUnigramGenerator).parameters)
    assert isinstance(create(Generator, node), DPUnigramGenerator)


def test_private_fit_spends_at_most_the_budget(corpus: Corpus) -> None:
    gen = DPUnigramGenerator()
    report = gen.fit(corpus, spec(2.0), seed=0)
    assert report.delta == 1e-4
    assert report.epsilon_spent <= 2.0 + 1e-6
    assert report.epsilon_spent == pytest.approx(2.0, abs=1e-6)
    assert report.details["mechanisms"] == 3 and report.details["sigma"] > 0
    assert report.details["vocab_size"] == len(public_vocabulary()[1])
    synthetic = gen.sample(8)
    assert len(synthetic) == 8 and synthetic.name == "example-synthetic"
    assert synthetic.ids == tuple(f"syn-{i}" for i in range(8))
    assert all(len(ls) == 1 and ls[0] in corpus.label_space for ls in synthetic.labels)
    assert all(synthetic.texts)


def test_the_jobs_delta_is_used(corpus: Corpus) -> None:
    report = DPUnigramGenerator().fit(corpus, spec(1.0, delta=1e-3), seed=0)
    assert report.delta == 1e-3 and report.epsilon_spent <= 1.0 + 1e-6


def test_one_document_moves_each_statistic_by_at_most_one(corpus: Corpus) -> None:
    """The sensitivity the noise is calibrated for, checked on single- and multi-label documents."""
    gen = DPUnigramGenerator(max_tokens_per_doc=4)
    multi = Corpus.build(
        ["great fun but cold food", "a long " + "very " * 300 + "boring text", ""],
        [["pos", "neg"], ["neg"], ["pos"]],
        ["pos", "neg"],
        multi_label=True,
    )
    for data in (corpus, multi):
        tokens, lengths = gen.exact_statistics(data)
        for i in range(len(data)):
            rest_tokens, rest_lengths = gen.exact_statistics(data.subset([j for j in range(len(data)) if j != i]))
            assert np.linalg.norm(tokens - rest_tokens) <= 1.0 + 1e-9
            assert np.linalg.norm(lengths - rest_lengths) <= 1.0


def test_label_counts_are_followed(corpus: Corpus) -> None:
    gen = DPUnigramGenerator()
    gen.fit(corpus, spec(1.0), seed=0)
    wanted = {("pos",): 3, ("neg",): 9}
    assert Counter(gen.sample(12, label_counts=wanted).labels) == wanted
    with pytest.raises(ConfigError, match="add up to n=5"):
        gen.sample(5, label_counts=wanted)
    with pytest.raises(ConfigError, match="single-label"):
        gen.sample(2, label_counts={("pos", "neg"): 2})


def test_without_dp_the_pipeline_is_exact(corpus: Corpus) -> None:
    """sigma = 0: each label speaks only its own words, at the corpus lengths (5 to 7 tokens)."""
    gen = DPUnigramGenerator()
    report = gen.fit(corpus, spec(math.inf), seed=0)
    assert math.isinf(report.epsilon_spent) and report.details["sigma"] == 0.0
    synthetic = gen.sample(20)
    assert Counter(synthetic.labels) == {("pos",): 10, ("neg",): 10}
    tokenizer = public_vocabulary()[0]
    for text, (label,) in zip(synthetic.texts, synthetic.labels):
        assert set(text.split()) <= words(tuple(POS if label == "pos" else NEG))
        assert len(tokenizer(text, add_special_tokens=False)["input_ids"]) in (5, 6, 7)


def test_multi_label_sets_draw_from_their_labels(corpus: Corpus) -> None:
    multi = Corpus.build(list(corpus.texts), corpus.labels, corpus.label_space, multi_label=True)
    gen = DPUnigramGenerator()
    gen.fit(multi, spec(math.inf), seed=0)
    synthetic = gen.sample(4, label_counts={("pos", "neg"): 4})
    assert synthetic.multi_label and set(synthetic.labels) == {("pos", "neg")}
    assert words(synthetic.texts) <= words(tuple(POS + NEG))


def test_multi_label_data_gets_a_dp_plan_of_label_sets() -> None:
    """Sets from partition selection (4 Gaussian mechanisms with the tail's marginals), charged at
    delta - delta_select."""
    texts = POS * 20 + NEG * 20 + [f"{p} but {n}" for p, n in zip(POS, NEG)] * 20
    multi = Corpus.build(
        texts, [["pos"]] * 60 + [["neg"]] * 60 + [["pos", "neg"]] * 60, ["pos", "neg"], multi_label=True
    )
    gen = DPUnigramGenerator()
    report = gen.fit(multi, spec(4.0, delta=1e-4), seed=0)
    d = report.details
    assert d["mechanisms"] == 4 and d["label_delta_select"] == pytest.approx(1e-5) and report.delta == 1e-4
    assert report.epsilon_spent == pytest.approx(4.0, abs=1e-6)  # read at delta - delta_select, total delta the job's
    assert d["label_sets_released"] == 3 and d["label_multi_sets_released"] == 1  # every set has 60 >> threshold
    assert set(d) <= DPUnigramGenerator.public_details
    synthetic = gen.sample(30)
    assert synthetic.multi_label and 5 <= sum(len(ls) == 2 for ls in synthetic.labels) <= 15


def test_noise_is_secret_unless_seeded(corpus: Corpus) -> None:
    """The published seed does not fix the noise; a replication noise_seed does (together with the seed)."""

    def run(seed: int, noise_seed: int | None) -> tuple[str, ...]:
        gen = DPUnigramGenerator()
        gen.fit(corpus, spec(1.0, noise_seed), seed=seed)
        return gen.sample(6).texts

    assert run(3, None) != run(3, None)
    assert run(3, 7) == run(3, 7)
    assert run(3, 7) != run(3, 8) and run(3, 7) != run(4, 7)


def test_invalid_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        DPUnigramGenerator(max_tokens_per_doc=0)
    with pytest.raises(ConfigError):
        DPUnigramGenerator(min_length=10, max_length=5)


def test_sample_before_fit_fails() -> None:
    with pytest.raises(ConfigError, match="before fit"):
        DPUnigramGenerator().sample(1)


@parametrize_with_checks([DPUnigramGenerator], audit=True)
def test_conforms_to_the_synbench_generator_contract(check: Callable[[], None]) -> None:
    """SynBench's conformance kit, one test case per named check (api, fit-sample, ..., sentinels, noise, audit):
    budget and delta, no private text in details or in what sample() writes, secret noise, label_counts, ..."""
    check()
