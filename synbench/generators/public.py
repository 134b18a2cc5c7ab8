"""The `public` control generator: text from the public model that never sees the private data.

The audit's negative control. `fit` reads only the corpus' label space, which
is public by definition (it comes from the dataset config), and keeps no
document; `sample` prompts the public instruction-tuned model (the `model`
config group, by default the offline SmolLM2-135M-Instruct) with a label name
and the dataset's domain. The output is a function of public information and
the seed alone, so releasing it is (0, 0)-DP with respect to the private set:
`epsilon_spent = 0`. A membership attack on it must find nothing (AUC near 0.5,
empirical epsilon lower bound near 0); anything else is a bug in the audit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np
from omegaconf import MISSING

from synbench.core.base import ChatRequest, FitReport, Generator
from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import ConfigError
from synbench.core.privacy import PrivacySpec
from synbench.dp import label_sets
from synbench.lm.settings import check_num_threads, check_prompt

DEFAULT_PROMPT = 'Write one short text from a {domain} dataset, with the label "{label}". Reply with the text only.'
PLACEHOLDERS = ("label", "domain")  # what the prompt is formatted with; {label} is required


@dataclass(frozen=True)
class PublicOptions:
    """`generator=public`'s keys (conf/generator/public.yaml sets what differs), checked when the config is read."""

    model: Any = MISSING  # the `model` group's node (the YAML wires `${model}`): the public model
    domain: str = MISSING  # public words for the dataset's domain in the prompt
    prompt: str = DEFAULT_PROMPT
    max_new_tokens: int = 32
    temperature: float = 1.0
    top_p: float = 0.95
    batch_size: int = 32
    num_threads: Optional[int] = None  # torch CPU threads while generating; null = PyTorch's default

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1 or self.batch_size < 1:
            raise ConfigError("generator.max_new_tokens and generator.batch_size must be at least 1")
        check_prompt(self.prompt, "generator.prompt", PLACEHOLDERS, "label")
        check_num_threads(self.num_threads, "generator.num_threads")


class PublicGenerator(Generator):
    """Label-prompted sampling from the public model; the label mix is uniform (a public prior) unless given."""

    options = PublicOptions
    public_details = frozenset({"control", "model"})

    def __init__(self, model: Mapping[str, Any], **options: Any) -> None:
        try:
            self.settings = PublicOptions(model=model, **options)
        except TypeError as exc:
            raise ConfigError(f"generator 'public': {exc}; see conf/generator/public.yaml for its keys") from None
        from synbench.lm.backends import LocalBackend  # torch, on first use: the schema reads this module

        self.backend = LocalBackend(model, batch_size=self.settings.batch_size, num_threads=self.settings.num_threads)
        self._label_space: tuple[str, ...] | None = None
        self._multi_label = False
        self._seed = 0

    @classmethod
    def reads_private(cls, options: Mapping[str, Any]) -> bool:
        """Never: the job withholds the private documents, so its results are a public baseline."""
        return False

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        """Keep the public label space (and whether the task is multi-label) and the seed; no document is read."""
        self._label_space, self._multi_label, self._seed = corpus.label_space, corpus.multi_label, seed
        return FitReport(epsilon_spent=0.0, delta=0.0, details={"control": "public", "model": self.backend.name})

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        if self._label_space is None:
            raise ConfigError("generator 'public': sample() called before fit()")
        plan = label_sets.plan(
            n,
            label_sets.uniform(self._label_space),
            self._label_space,
            self._multi_label,
            np.random.default_rng(self._seed),
            label_counts,
        )
        texts = self._write(plan)
        return Corpus.synthetic("public", texts, plan, self._label_space, self._multi_label)

    def _write(self, plan: list[Labels]) -> list[str]:
        """One text per label set of `plan`, from the shared batched local backend (chat template, KV cache)."""
        s = self.settings
        requests = [ChatRequest(s.prompt.format(domain=s.domain, label=", ".join(labels))) for labels in plan]
        return self.backend.complete(
            requests, max_new_tokens=s.max_new_tokens, temperature=s.temperature, top_p=s.top_p, seed=self._seed
        )
