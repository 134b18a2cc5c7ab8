"""`attack=ngram`: the authors' n-gram membership attack, fitted and scored with array operations.

The model is theirs (schlevik/dp-transformers `mia/ngram.py`): each document
padded with n-1 `<s>` and one `</s>`, add-one smoothing
p(w | c) = (count(c, w) + 1) / (count(c) + V), log P(x) the sum of the token
log-probabilities, and score(x) = log P_syn(x) - mean_m log P_ref_m(x).
V is theirs too: the number of distinct tokens of the corpus the model is
fitted on, plus one for unseen tokens (so each model has its own V; the
markers are not counted). count(c) counts c as a context: the sum of
count(c, w) over the next tokens, `</s>` included. That is `smoothing=add_one`,
the default.

`smoothing=kneser_ney` is interpolated Kneser-Ney (Chen & Goodman 1998) with
one absolute discount D for every order:
P_k(w | h) = max(c_k(h w) - D, 0) / c_k(h .) + D N1+(h .) / c_k(h .) P_{k-1}(w | h'),
h' the context without its first token, P_0 = 1/V (V as above), and the
order's own P_{k-1} where c_k(h .) = 0. c_n are raw counts; a lower order
counts continuations, c_k(g) = the number of distinct (k+1)-gram types that
end in g. It moves mass from a context's seen continuations to the lower
orders, so a target n-gram that is absent but whose words are common is not
scored as if it were unseen. It needs distinct-type counts over the whole
corpus, so it encodes every corpus token (no shared OTHER id), which is slower.

Speed (`make bench BENCH=audit`). Only the targets' n-grams are ever counted,
so only the targets' vocabulary needs ids: a corpus token outside it becomes
one shared OTHER id, which can never complete a target n-gram. Tokens are
dictionary-encoded by Arrow's C++ kernels and matched against the target
vocabulary there; with `tokenizer=whitespace` Arrow splits them too, so no
Python code runs per token (spaCy's tokenizer is Python-level and dominates
its cost). An n-gram is one int64 (the ids side by side, 63 // n bits each:
exact, no hashing). Each corpus' n-grams are looked up in a hash index of
the targets' distinct n-grams (`pandas.Index.get_indexer`) and counted with
`np.bincount`; a sparse (targets x distinct n-grams) count matrix sums the
log-probabilities of every target in one product. Targets are tokenized once
and the reference term is computed once per (targets, references), however
many synthetic corpora are scored against them.

Options beside the authors' model (docs/audit.md has a table of which
reference each matches and its power on the calibration bench):

- `pad_target` (default true, the authors'): score the target padded like the
  fitted documents. False scores only the n-grams inside the target (no `<s>`
  context, no `</s>`), as the n-gram score of "The Canary's Echo" (Meeus et al.
  2025, matthieumeeus/dp-transformers `.../membership_inference/mia_methods.py`,
  `ngram_log_likelihood`), whose models are still fitted on padded documents.
- `calibration`: `log_mean` (default, the authors') subtracts the mean of the
  reference log-probabilities; `rmia` divides P_syn(x) by RMIA's online
  marginal (Zarifzadeh et al. 2024 as privacy_estimates implements it,
  microsoft/privacy-estimates `privacy_estimates/experiments/attacks/rmia/rmia.py`):
  the mean of P over the references that hold x (IN), and over those that do
  not (OUT), each a log-mean-exp, averaged; the score is the log of that ratio.
  A reference holds x when x is one of its texts, which is how the audit
  design builds them (each target in half of them).
- `normalise`: `per_token` (the default: the calibrated score divided by
  the number of scored n-grams of the target, so long documents no longer
  own both tails of a global threshold; the highest mean AUC of the three
  on the calibration bench), `none` (the authors' sum, which
  `+experiment=paper_psytar_audit` keeps) or `reference_z` (divided by the
  standard deviation, ddof 1, of the target's log-probability over the
  reference corpora: the per-example spread LiRA fits, Carlini et al. 2022,
  tensorflow/privacy `research/mi_lira_2021/score.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from scipy import sparse
from scipy.special import logsumexp

from synbench.core.base import Attack
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.text.nlp import tokenize

BOS, EOS, FIRST_WORD = 0, 1, 2
TOKENIZERS = ("spacy", "whitespace")
SMOOTHINGS = ("add_one", "kneser_ney")
CALIBRATIONS = ("log_mean", "rmia")
NORMALISATIONS = ("none", "per_token", "reference_z")
MIN_SPREAD = 1e-6  # floor of a target's reference spread (reference_z): a target with no spread is not divided by 0


def whitespace_tokens(texts: Sequence[str]) -> tuple[pa.Array, np.ndarray]:
    """(every token end to end, tokens per document), split at runs of ASCII whitespace by Arrow.

    The same tokens as `str.split()` except that the Unicode-only separators
    (U+001C-U+001F, U+0085, U+00A0, U+2000...) do not split.
    """
    trimmed = pc.ascii_trim_whitespace(pa.array(list(texts), type=pa.large_string()))
    lists = pc.ascii_split_whitespace(trimmed)
    lengths = lists.value_lengths().to_numpy(zero_copy_only=False).astype(np.int64)
    tokens = lists.flatten()
    empty = pc.equal(pc.binary_length(trimmed), 0).to_numpy(zero_copy_only=False)
    if empty.any():  # Arrow splits "" into [""], str.split() into []
        lengths[empty] = 0
        tokens = tokens.filter(pc.not_equal(tokens, ""))
    return tokens, lengths


@dataclass(frozen=True)
class NgramKeys:
    """One entry per predicted token (every word and each `</s>`): its context, its n-gram, its document."""

    context: np.ndarray
    full: np.ndarray
    doc: np.ndarray


def inner_ngrams(lengths: np.ndarray, n: int) -> np.ndarray:
    """Which entries of `ngram_keys` (for documents of `lengths`) have no padding marker: the unpadded n-grams."""
    predicted = lengths + 1
    position = np.arange(int(predicted.sum())) - np.repeat(np.cumsum(predicted) - predicted, predicted)
    return (position >= n - 1) & (position < np.repeat(lengths, predicted))


def ngram_keys(ids: np.ndarray, lengths: np.ndarray, n: int, bits: int) -> NgramKeys:
    """The n-grams of every padded document (word `ids` end to end), never crossing a document boundary."""
    padded_len = lengths + n
    word_start = np.cumsum(padded_len) - padded_len + n - 1  # where each document's first word goes
    padded = np.full(int(padded_len.sum()), BOS, dtype=np.int64)
    padded[word_start + lengths] = EOS
    padded[np.repeat(word_start - (np.cumsum(lengths) - lengths), lengths) + np.arange(len(ids))] = ids
    predicted = lengths + 1
    pos = np.repeat(word_start - (np.cumsum(predicted) - predicted), predicted) + np.arange(int(predicted.sum()))
    context = np.zeros(len(pos), dtype=np.int64)
    for back in range(n - 1, 0, -1):
        context = (context << bits) | padded[pos - back]
    return NgramKeys(context, (context << bits) | padded[pos], np.repeat(np.arange(len(lengths)), predicted))


@dataclass(frozen=True)
class _Queries:
    """The targets: their vocabulary, their distinct n-grams and contexts, how often each target holds each.

    `full_counts[d, u]` is how often target d contains distinct n-gram u, so
    sum_tokens log p(w | c) of every target is two sparse matrix-vector
    products with per-n-gram log-probabilities.
    """

    vocabulary: pa.Array
    tokens: pa.Array  # the targets' tokens end to end (Kneser-Ney re-encodes them per corpus)
    lengths: np.ndarray
    scored: np.ndarray | None  # which entries of the targets' `ngram_keys` are scored (None: all, padded)
    full_index: pd.Index
    full_counts: sparse.csr_matrix
    context_index: pd.Index
    context_counts: sparse.csr_matrix

    @property
    def other(self) -> int:
        """The id shared by every token outside the targets' vocabulary."""
        return FIRST_WORD + len(self.vocabulary)

    @property
    def n_scored(self) -> np.ndarray:
        """The number of n-grams scored per target (at least 1, so that a division by it is defined)."""
        return np.maximum(np.asarray(self.full_counts.sum(axis=1)).ravel(), 1)


@dataclass(frozen=True)
class _References:
    """Per reference corpus and target: log P_ref_m(x) (M, T), and whether corpus m holds target x (M, T)."""

    log_probs: np.ndarray
    holds: np.ndarray

    def log_mean(self) -> np.ndarray:
        """mean_m log P_ref_m(x): the authors' calibration term."""
        return self.log_probs.mean(axis=0)

    def rmia_marginal(self) -> np.ndarray:
        """log of RMIA's online P(x): the mean of (mean P over the IN references) and (mean P over the OUT ones),
        each side a log-mean-exp; a side with no reference drops out (P(x) is then the other side's mean)."""
        sides = np.stack([self.holds, ~self.holds])  # (2, M, T)
        count = sides.sum(axis=1)  # (2, T)
        with np.errstate(divide="ignore"):  # an empty side's mean is log 0 = -inf, and then weighs nothing
            side_means = logsumexp(self.log_probs[None], axis=1, b=sides / np.maximum(count, 1)[:, None])
        present = count > 0
        return logsumexp(side_means, axis=0, b=present / present.sum(axis=0))

    def spread(self) -> np.ndarray:
        """The standard deviation (ddof 1) of log P_ref_m(x) over the references, floored at MIN_SPREAD."""
        return np.maximum(self.log_probs.std(axis=0, ddof=1), MIN_SPREAD)


def _count_matrix(doc: np.ndarray, code: np.ndarray, n_docs: int, n_codes: int) -> sparse.csr_matrix:
    return sparse.csr_matrix((np.ones(len(doc)), (doc, code)), shape=(n_docs, n_codes))


def _occurrences(index: pd.Index, keys: np.ndarray) -> np.ndarray:
    """How often each entry of `index` occurs among `keys`."""
    at = index.get_indexer(keys)
    return np.bincount(at[at >= 0], minlength=len(index))


class NgramAttack(Attack):
    """n-gram LM membership attack (add-one or Kneser-Ney); `reference=False` is the synthetic-only variant,
    score = log P_syn."""

    def __init__(
        self,
        n: int = 2,  # n-gram order (the paper: bigrams)
        # spacy (the en_core_web_sm tokenizer, as the authors) | whitespace (ASCII whitespace, in Arrow: fastest)
        tokenizer: str = "spacy",
        spacy_model: str = "en_core_web_sm",
        reference: bool = True,  # false = the synthetic-only variant, score(x) = log P_syn(x)
        smoothing: str = "add_one",  # add_one (the authors') | kneser_ney (interpolated, absolute discount)
        discount: float = 0.75,  # kneser_ney only: the absolute discount D
        # per_token (score / scored n-grams: the most power on the calibration bench) | none (the authors' sum) |
        # reference_z (score / its spread over the references)
        normalise: str = "per_token",
        # log_mean (the authors': minus mean_m log P_ref_m) | rmia (RMIA online: P_syn over the mean of the IN and
        # the OUT references' log-mean-exp P; privacy_estimates)
        calibration: str = "log_mean",
        pad_target: bool = True,  # true: the target padded with <s>, </s> (the authors') | false: as The Canary's Echo
    ) -> None:
        if not 1 <= n <= 8:
            raise ConfigError(f"attack.ngram.n={n!r} must be a whole number from 1 to 8")
        if tokenizer not in TOKENIZERS:
            raise ConfigError(f"attack.ngram.tokenizer={tokenizer!r} is unknown; choose one of {', '.join(TOKENIZERS)}")
        if smoothing not in SMOOTHINGS:
            raise ConfigError(f"attack.ngram.smoothing={smoothing!r} is unknown; choose one of {', '.join(SMOOTHINGS)}")
        if not 0 < discount < 1:
            raise ConfigError(f"attack.ngram.discount={discount!r} must lie strictly between 0 and 1")
        for key, value, allowed in (
            ("normalise", normalise, NORMALISATIONS),
            ("calibration", calibration, CALIBRATIONS),
        ):
            if value not in allowed:
                raise ConfigError(f"attack.ngram.{key}={value!r} is unknown; choose one of {', '.join(allowed)}")
        if not reference and (normalise == "reference_z" or calibration != "log_mean"):
            raise ConfigError(
                f"attack.ngram.normalise={normalise} calibration={calibration} read the reference corpora, which "
                "reference=false turns off; set attack.ngram.reference=true, or normalise=none|per_token and "
                "calibration=log_mean"
            )
        self.n, self.tokenizer, self.spacy_model, self.reference = n, tokenizer, spacy_model, bool(reference)
        self.smoothing, self.discount = smoothing, float(discount)
        self.normalise, self.calibration, self.pad_target = normalise, calibration, bool(pad_target)
        self._bits = 63 // n
        # Per-instance caches: an audit scores many synthetic corpora against the same targets and references.
        self._queries = lru_cache(maxsize=2)(self._build_queries)
        self._references = lru_cache(maxsize=2)(self._reference_log_probs)

    def score(self, targets: Sequence[str], synthetic: Corpus, references: Sequence[Corpus]) -> np.ndarray:
        """log P_syn(x) minus the calibration term (none when `reference` is off), then normalised, per target."""
        key = tuple(targets)
        queries = self._queries(key)
        score = self.log_prob(queries, synthetic.texts)
        if self.reference:
            if not references:
                raise ConfigError(
                    "attack 'ngram' with reference=true needs reference corpora; set attack.ngram.reference=false "
                    "for the synthetic-only variant"
                )
            if self.normalise == "reference_z" and len(references) < 2:
                raise ConfigError(
                    "attack.ngram.normalise=reference_z needs at least 2 reference corpora (a spread over them); "
                    "raise audit.n_references or choose normalise=none|per_token"
                )
            refs = self._references(key, tuple(ref.texts for ref in references))
            score = score - (refs.rmia_marginal() if self.calibration == "rmia" else refs.log_mean())
            if self.normalise == "reference_z":
                return score / refs.spread()
        return score / queries.n_scored if self.normalise == "per_token" else score

    def tokens(self, texts: Sequence[str]) -> tuple[pa.Array, np.ndarray]:
        """(every token end to end, tokens per document) with the configured tokenizer."""
        if self.tokenizer == "whitespace":
            return whitespace_tokens(texts)
        docs = tokenize(texts, self.spacy_model)
        return pa.array(list(chain.from_iterable(docs)), type=pa.large_string()), np.fromiter(
            map(len, docs), np.int64, len(docs)
        )

    def log_prob(self, queries: _Queries, texts: Sequence[str]) -> np.ndarray:
        """log P(target) under the model fitted on `texts`, for every target of `queries`."""
        tokens, lengths = self.tokens(texts)
        if self.smoothing == "kneser_ney":
            return self.kneser_ney_log_prob(queries, tokens, lengths)
        words = pc.dictionary_encode(tokens)
        vocab = len(words.dictionary) + 1
        known = pc.fill_null(
            pc.add(pc.index_in(words.dictionary, value_set=queries.vocabulary), FIRST_WORD), queries.other
        )
        ids = known.to_numpy(zero_copy_only=False).astype(np.int64)[words.indices.to_numpy(zero_copy_only=False)]
        keys = ngram_keys(ids, lengths, self.n, self._bits)
        pair = np.log1p(_occurrences(queries.full_index, keys.full))
        if self.n <= 2:  # a context is a single id (or none): count densely, no hash lookups
            contexts = np.bincount(keys.context, minlength=queries.other + 1)[queries.context_index.to_numpy()]
        else:
            contexts = _occurrences(queries.context_index, keys.context)
        return queries.full_counts @ pair - queries.context_counts @ np.log(contexts + vocab)

    def _build_queries(self, targets: tuple[str, ...]) -> _Queries:
        tokens, lengths = self.tokens(targets)
        words = pc.dictionary_encode(tokens)
        if len(words.dictionary) + FIRST_WORD + 1 > 1 << self._bits:
            raise ConfigError(
                f"attack.ngram.n={self.n} packs each token into {self._bits} bits, too few for the "
                f"targets' {len(words.dictionary)} distinct tokens; use a smaller n"
            )
        ids = words.indices.to_numpy(zero_copy_only=False).astype(np.int64) + FIRST_WORD
        keys = ngram_keys(ids, lengths, self.n, self._bits)
        scored = None if self.pad_target else inner_ngrams(lengths, self.n)
        if scored is not None:
            keys = NgramKeys(keys.context[scored], keys.full[scored], keys.doc[scored])
        full_code, full = pd.factorize(keys.full)
        context_code, context = pd.factorize(keys.context)
        return _Queries(
            words.dictionary,
            tokens,
            lengths,
            scored,
            pd.Index(full),
            _count_matrix(keys.doc, full_code, len(targets), len(full)),
            pd.Index(context),
            _count_matrix(keys.doc, context_code, len(targets), len(context)),
        )

    def kneser_ney_log_prob(self, queries: _Queries, tokens: pa.Array, lengths: np.ndarray) -> np.ndarray:
        """log P(target) under interpolated Kneser-Ney fitted on a corpus' tokens, for every target of `queries`."""
        words = pc.dictionary_encode(tokens)
        size = len(words.dictionary)
        if size + FIRST_WORD + 1 > 1 << self._bits:
            raise ConfigError(
                f"attack.ngram.n={self.n} with smoothing=kneser_ney packs each token into {self._bits} bits, "
                f"too few for the corpus' {size} distinct tokens; use a smaller n"
            )
        ids = words.indices.to_numpy(zero_copy_only=False).astype(np.int64) + FIRST_WORD
        corpus = ngram_keys(ids, lengths, self.n, self._bits).full
        # A target token the corpus lacks gets one shared unseen id: no corpus n-gram holds it, so sharing is exact.
        known = pc.fill_null(
            pc.add(pc.index_in(queries.tokens, value_set=words.dictionary), FIRST_WORD), FIRST_WORD + size
        )
        target = ngram_keys(known.to_numpy(zero_copy_only=False).astype(np.int64), queries.lengths, self.n, self._bits)
        prob = np.full(len(target.full), 1.0 / (size + 1))  # P_0 = 1/V
        types = pd.unique(corpus)
        for k in range(1, self.n + 1):
            suffix = np.int64((1 << (k * self._bits)) - 1)
            if k == self.n:  # the highest order counts occurrences
                grams, counts = np.unique(corpus & suffix, return_counts=True)
            else:  # lower orders count distinct left extensions: (k+1)-gram types ending in the k-gram
                longer = pd.unique(types & np.int64((1 << ((k + 1) * self._bits)) - 1))
                grams, counts = np.unique(longer & suffix, return_counts=True)
            contexts = grams >> self._bits
            context_index = pd.Index(np.unique(contexts))
            at_context = context_index.get_indexer(contexts)
            total = np.bincount(at_context, weights=counts, minlength=len(context_index))
            distinct = np.bincount(at_context, minlength=len(context_index))
            query = target.full & suffix
            at = pd.Index(grams).get_indexer(query)
            seen = np.where(at >= 0, counts[np.maximum(at, 0)], 0)
            ctx = context_index.get_indexer(query >> self._bits)
            denominator = np.where(ctx >= 0, total[np.maximum(ctx, 0)], 0.0)
            weight = np.where(ctx >= 0, distinct[np.maximum(ctx, 0)], 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                mixed = (np.maximum(seen - self.discount, 0) + self.discount * weight * prob) / denominator
            prob = np.where(denominator > 0, mixed, prob)
        log_prob = np.log(prob)
        if queries.scored is not None:
            return np.bincount(
                target.doc[queries.scored], weights=log_prob[queries.scored], minlength=len(queries.lengths)
            )
        return np.bincount(target.doc, weights=log_prob, minlength=len(queries.lengths))

    def _reference_log_probs(self, targets: tuple[str, ...], references: tuple[tuple[str, ...], ...]) -> _References:
        queries = self._queries(targets)
        holds = np.array([[t in texts for t in targets] for texts in map(frozenset, references)], dtype=bool)
        return _References(np.stack([self.log_prob(queries, ref) for ref in references]), holds)
