"""The `template` baseline generator: label names and public filler words, never a private document.

It must pass the conformance kit as an ordinary (not control) generator, write the same corpus whatever private
documents it was fitted on, draw its labels from the uniform public prior, spend 0 at any eps, and refuse a template
it could not fill.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from conftest import compose_config, run_cli
from synbench.audit.canaries import public_words
from synbench.core import registry
from synbench.core.base import Generator
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.generators.template import TemplateGenerator
from synbench.job import release
from synbench.testing import check_generator
from synbench.testing.generator import job_budget

SPACE = ("Birth Control", "Depression", "Pain", "Acne", "Bipolar Disorde", "Insomnia")


def private(texts: list[str], multi_label: bool = False) -> Corpus:
    """A private corpus over SPACE: document i labelled with label i mod 6 (and the next one, when multi-label)."""
    labels = [
        [SPACE[i % len(SPACE)], *([SPACE[(i + 1) % len(SPACE)]] if multi_label else [])] for i in range(len(texts))
    ]
    return Corpus.build(texts, labels, SPACE, multi_label=multi_label, name="private")


def fitted(corpus: Corpus, seed: int = 0, eps: float = 1.0, **options: object) -> TemplateGenerator:
    generator = TemplateGenerator(**options)
    report = generator.fit(corpus, job_budget(len(corpus), eps), seed)
    assert (report.epsilon_spent, report.delta) == (0.0, 0.0)
    return generator


def test_it_passes_the_conformance_kit_as_an_ordinary_private_generator() -> None:
    """Not a control (release.CONTROLS holds copy and public only): the kit checks its budget and its sentinels."""
    assert not release.is_control(TemplateGenerator)
    check_generator(TemplateGenerator)


def test_two_different_private_corpora_give_the_same_documents_for_one_seed() -> None:
    """The output is a function of the public label space, the seed and the size: the private text never enters."""
    first = private([f"review {i} of a patient with a rare word zxqvelt{i}" for i in range(40)])
    second = private(["completely different text"] * 7)
    out, other = fitted(first, seed=3).sample(60), fitted(second, seed=3).sample(60)
    assert (out.texts, out.labels) == (other.texts, other.labels)
    assert out.texts != fitted(first, seed=4).sample(60).texts  # the seed, public, is its only randomness
    assert not any("zxqvelt" in text or "review" in text for text in out.texts)


def test_each_document_is_the_filled_template_then_public_filler_words() -> None:
    out = fitted(private(["x"] * 6), seed=1, template="I take this for {label}.", filler_words=7).sample(12)
    vocabulary = set(public_words())
    for text, (label,) in zip(out.texts, out.labels):
        start = f"I take this for {label}."
        assert text.startswith(start + " ")
        filler = text[len(start) :].split()
        assert len(filler) == 7 and set(filler) <= vocabulary


def test_labels_come_from_the_uniform_public_prior() -> None:
    """600 documents over six labels: exactly 100 each, whatever the private mix (here every document is 'Pain');
    on a multi-label task one label per document, as `public` does."""
    skewed = Corpus.build(["x"] * 50, [["Pain"]] * 50, SPACE, name="private")
    assert Counter(fitted(skewed).sample(600).labels) == {(label,): 100 for label in SPACE}
    multi = fitted(private(["x"] * 12, multi_label=True)).sample(60)
    assert multi.multi_label and Counter(multi.labels) == {(label,): 10 for label in SPACE}
    assert multi.texts[0].startswith(f"{multi.labels[0][0]}.")


def test_label_counts_are_followed_and_a_label_set_is_named_in_full() -> None:
    generator = fitted(private(["x"] * 12, multi_label=True))
    out = generator.sample(3, {("Pain", "Acne"): 2, ("Insomnia",): 1})
    assert Counter(out.labels) == {("Pain", "Acne"): 2, ("Insomnia",): 1}
    assert sorted(text.split(".")[0] for text in out.texts) == ["Insomnia", "Pain, Acne", "Pain, Acne"]


def test_it_spends_nothing_at_any_eps() -> None:
    for eps in (0.5, 8.0, math.inf):
        fitted(private(["x"] * 6), eps=eps)


@pytest.mark.parametrize(
    ("override", "fix"),
    [
        ("generator.template=no label here", "must hold {label}"),
        ("generator.template='{label} in {domain}'", "no other {field}"),
        ("generator.filler_words=-1", "0 or more"),
    ],
)
def test_a_template_it_could_not_fill_is_refused_in_one_line(override: str, fix: str) -> None:
    node = compose_config(["generator=template", override]).generator
    with pytest.raises(ConfigError, match="generator.") as refused:
        registry.create(Generator, node)
    assert fix in str(refused.value)


def test_a_template_job_records_epsilon_spent_zero_and_no_control(tmp_path: Path) -> None:
    """Through the app: results say epsilon_spent 0, not a non-private control, and a public noise mode (it is not
    a control, so its eps is applied as given)."""
    run_cli(
        ["generator=template", "eps=1", "metrics=[utility]", "task.n_synthetic=60", "tracking=none"],
        cwd=tmp_path,
    )
    (path,) = tmp_path.rglob("results.json")
    results = json.loads(path.read_text())
    assert results["status"] == "complete" and results["generator"] == "template"
    assert results["epsilon_spent"] == 0.0 and results["non_private_control"] is False
    assert results["noise"] != release.CONTROL_NOISE
    assert results["generation"]["label_prior"] == "uniform" and results["generation"]["n_synthetic"] == 60
    assert results["utility"]["f1_macro"] > results["utility"]["majority_f1_macro"]
