"""The `template` baseline generator: a label name and public filler words, never a private document.

What does a downstream classifier learn from text that carries nothing but
the label's name? Each document is `template` with the label name filled in
(`"{label}."` by default; a label set's names joined by ", "), followed by
`filler_words` words drawn uniformly from a public vocabulary (the whole
alphabetic words of the all-MiniLM-L6-v2 WordPiece vocabulary, the same list
the audit's canaries draw from: `synbench.audit.canaries.public_words`).
The label of each document comes from the public uniform prior over the
label space (`synbench.dp.label_sets.uniform`, one label per document on a
multi-label task, as `public` does), or from the caller's `label_counts`.

`fit` reads only the corpus' label space and whether it is multi-label, both
public (the dataset's config names them), and the seed; no document is read,
so the release is (0, 0)-DP with respect to the private set and
`epsilon_spent = 0` at any eps. Its randomness may therefore come from the
job seed: nothing private is hidden by it. It is not a control
(`synbench.job.release.CONTROLS`): it meets every budget it is given, as any
private generator must. Its class says it `reads_private` never, so the job
gives `fit` the label space without a document and records the job as a
public baseline, which the report shows beside random and majority, with
every generator's gain over the best such baseline
(docs/generators/template.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from synbench.audit.canaries import public_words
from synbench.core.base import FitReport, Generator
from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import ConfigError
from synbench.core.privacy import PrivacySpec
from synbench.dp import label_sets

LABEL_PRIOR = "uniform"  # the public prior every document's label comes from (`label_sets.uniform`)


@dataclass(frozen=True)
class TemplateOptions:
    """Every `generator.*` key of the template baseline (conf/generator/template.yaml)."""

    template: str = "{label}."  # each document's start; {label} becomes its label name(s), joined by ", "
    filler_words: int = 20  # public words drawn uniformly after the template, one draw per word

    def __post_init__(self) -> None:
        if "{label}" not in self.template or not formats_with_label_only(self.template):
            raise ConfigError(
                "generator.template must hold {label} and no other {field} (write a brace as {{ or }}), "
                'e.g. generator.template="I take this for {label}."'
            )
        if self.filler_words < 0:
            raise ConfigError(f"generator.filler_words={self.filler_words} must be 0 or more")


def formats_with_label_only(template: str) -> bool:
    """Whether `str.format(label=...)` fills `template`: no other field and no stray brace, which would fail
    only at sample time, after the job has run its fit."""
    try:
        template.format(label="")
    except (KeyError, IndexError, ValueError):
        return False
    return True


class TemplateGenerator(Generator):
    """Label name plus uniform public words; labels from the public uniform prior; reads no private document."""

    public_details = frozenset({"label_prior", "filler_vocabulary"})
    options = TemplateOptions

    def __init__(self, **options: Any) -> None:
        settings = TemplateOptions(**options)
        self.template, self.filler_words = settings.template, settings.filler_words
        self._label_space: tuple[str, ...] | None = None
        self._multi_label = False
        self._seed = 0

    @classmethod
    def reads_private(cls, options: Mapping[str, Any]) -> bool:
        """Never: the job withholds the private documents, so its results are a public baseline."""
        return False

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        """Keep the public label space, whether the task is multi-label, and the seed; no document is read."""
        self._label_space, self._multi_label, self._seed = corpus.label_space, corpus.multi_label, seed
        return FitReport(
            epsilon_spent=0.0,
            delta=0.0,
            details={"label_prior": LABEL_PRIOR, "filler_vocabulary": len(public_words())},
        )

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        """`n` documents from the seed alone: the same seed, size and label space give the same corpus."""
        if self._label_space is None:
            raise ConfigError("generator 'template': sample() called before fit()")
        rng = np.random.default_rng(self._seed)
        plan = label_sets.plan(
            n, label_sets.uniform(self._label_space), self._label_space, self._multi_label, rng, label_counts
        )
        vocabulary = public_words()
        picks = rng.integers(len(vocabulary), size=(len(plan), self.filler_words))
        texts = [
            " ".join([self.template.format(label=", ".join(labels)), *(vocabulary[i] for i in row)])
            for labels, row in zip(plan, picks)
        ]
        return Corpus.synthetic("template", texts, plan, self._label_space, self._multi_label)
