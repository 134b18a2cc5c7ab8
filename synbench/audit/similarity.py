"""`attack=similarity`: a target's closest match in the released synthetic corpus (the SIM attack of Meeus et al. 2025).

"The Canary's Echo" (Meeus, Wutschitz, Zanella-Béguelin, Tople & Shokri,
ICML 2025) scores a target by how similar the synthetic records nearest to
it are: Jaccard similarity of their n-gram sets (SIM_jac) or cosine
similarity of their sentence embeddings (SIM_emb), averaged over the `k`
closest records. Unlike the n-gram LM attack, which needs a target's exact
n-grams in the synthetic text, a similarity survives paraphrase: a document
released with half its words swapped keeps half its word set and most of
its meaning, while a bigram survives only if both its words do.

The score is calibrated like the n-gram attack's, against the same balanced
reference corpora (each target in exactly half of them):
score(x) = sim_syn(x) - mean_m sim_ref_m(x), so a target that is close to
everything (a typical document) does not look like a member. Larger means member.

`similarity=jaccard` (the default) compares sets of lower-cased word
n-grams (`unit=word`) or character n-grams within word boundaries
(`unit=char`): on the calibration grid it caught every cell where the
embedding cosine missed the half-swapped ones in one run, and it needs no
encoder pass. `similarity=embedding` uses the audit's encoder (the `encoder` config node,
the one that picks the outlier targets) through an in-memory
`EmbeddingCache`, and keeps each distinct text's vector for the process
(`text_vectors`, per encoder): a text is embedded once however many
synthetic and reference corpora hold it (the references overlap and each
holds half the targets; repeated audits of one design share all of them).
Nothing is written to disk (the cache folder is not used).

`similarity=levenshtein` is the string similarity of "The Canary's Echo"
(matthieumeeus/dp-transformers `.../membership_inference/mia_methods.py`,
`levenshtein_similarities`): the InDel ratio 1 - InDel(a, b) / (|a| + |b|)
of the lower-cased texts (the reference lower-cases the target only), from
rapidfuzz's C++ `cdist`. `k` takes their values, {1, 5, 10, 25}.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np
from rapidfuzz.distance import Indel
from rapidfuzz.process import cdist
from sklearn.feature_extraction.text import CountVectorizer

from synbench.core.base import Attack, EncoderSpec
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.text.embeddings import EmbeddingCache

SIMILARITIES = ("embedding", "jaccard", "levenshtein")
UNITS = ("word", "char")
KS = (1, 5, 10, 25)  # the k of "The Canary's Echo"
WORD_PATTERN = r"(?u)\b\w+\b"  # a word of unit=word: a run of letters, digits or underscores (lower-cased)


def top_k_mean(similarity: np.ndarray, k: int) -> np.ndarray:
    """Per row, the mean of its k largest entries (all of them when a row is shorter; 0 for an empty corpus)."""
    if similarity.shape[1] == 0:
        return np.zeros(similarity.shape[0])
    k = min(k, similarity.shape[1])
    return np.partition(similarity, similarity.shape[1] - k, axis=1)[:, -k:].mean(axis=1)


MAX_KEPT_VECTORS = 200_000  # per encoder (about 300 MB at 384 dimensions): beyond it the memo starts afresh


@lru_cache(maxsize=4)
def text_vectors(spec: EncoderSpec) -> dict[str, np.ndarray]:
    """The process-wide memo of unit-length embeddings by text for one encoder (memory only)."""
    return {}


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (zero rows stay zero), so a product of two is their cosine similarity."""
    vectors = np.asarray(vectors, dtype=float)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def words(text: str) -> list[str]:
    """The lower-cased words of `text` in order, as the Jaccard similarity's unit=word sees them."""
    return re.findall(WORD_PATTERN, text.lower())


def word_set(text: str) -> set[str]:
    """The distinct lower-cased words of `text`."""
    return set(words(text))


def jaccard_matrix(targets: Sequence[str], texts: Sequence[str], unit: str, n: int) -> np.ndarray:
    """(targets x texts) Jaccard similarity of the documents' n-gram sets; 0 where both sets are empty.

    Intersections are one sparse product of binary indicator matrices over a
    vocabulary fitted on both sides; |A u B| = |A| + |B| - |A n B|.
    """
    if unit == "word":
        vectorizer = CountVectorizer(binary=True, analyzer="word", ngram_range=(n, n), token_pattern=WORD_PATTERN)
    else:
        vectorizer = CountVectorizer(binary=True, analyzer="char_wb", ngram_range=(n, n))
    if not len(texts) or not len(targets):
        return np.zeros((len(targets), len(texts)))
    try:
        vectorizer.fit([*targets, *texts])
    except ValueError:  # no n-gram in any document (all empty or shorter than n)
        return np.zeros((len(targets), len(texts)))
    a, b = vectorizer.transform(targets), vectorizer.transform(texts)
    inter = np.asarray((a @ b.T).todense(), dtype=float)
    union = np.asarray(a.sum(axis=1)).reshape(-1, 1) + np.asarray(b.sum(axis=1)).reshape(1, -1) - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def indel_ratio_matrix(targets: Sequence[str], texts: Sequence[str]) -> np.ndarray:
    """(targets x texts) InDel ratio 1 - InDel / (|a| + |b|) of the lower-cased strings (1 for two empty strings)."""
    if not len(texts) or not len(targets):
        return np.zeros((len(targets), len(texts)))
    return cdist(
        [t.lower() for t in targets], [t.lower() for t in texts], scorer=Indel.normalized_similarity, dtype=np.float64
    )


class SimilarityAttack(Attack):
    """Closest-match membership attack: mean similarity of the k nearest synthetic documents, minus the references'."""

    config_name: ClassVar[str] = "similarity"  # its node, `attack.<config_name>`, that error messages point to

    def __init__(
        self,
        # jaccard: n-gram set overlap (caught every calibration cell, bench_audit_calibration) | embedding: cosine of
        # the audit encoder's sentence embeddings (slower on CPU; weaker there) | levenshtein: InDel ratio of the
        # lower-cased texts (rapidfuzz; The Canary's Echo)
        similarity: str = "jaccard",
        k: int = 1,  # mean similarity of the k most similar synthetic documents: 1, 5, 10 or 25
        unit: str = "word",  # jaccard only: word n-grams | char (character n-grams within word boundaries)
        n: int = 1,  # jaccard only: n-gram size (char: try 4)
        reference: bool = True,  # false = sim_syn(x) alone
        encoder: Mapping[str, Any] | None = None,  # embedding only: the audit's encoder (conf/attack/*.yaml wires it)
    ) -> None:
        key = f"attack.{self.config_name}"
        if similarity not in SIMILARITIES:
            raise ConfigError(f"{key}.similarity={similarity!r} is unknown; choose one of {', '.join(SIMILARITIES)}")
        if unit not in UNITS:
            raise ConfigError(f"{key}.unit={unit!r} is unknown; choose one of {', '.join(UNITS)}")
        if n < 1:
            raise ConfigError(f"{key}.n={n!r} must be a positive whole number")
        if k not in KS:
            raise ConfigError(f"{key}.k={k!r} must be one of {', '.join(map(str, KS))}")
        if similarity == "embedding" and not encoder:
            raise ConfigError(
                f"{key} with similarity=embedding needs an encoder node (conf/attack/{self.config_name}.yaml "
                "sets encoder: ${encoder}); set it, or use similarity=jaccard"
            )
        self.similarity, self.k, self.unit, self.n, self.reference = similarity, k, unit, n, reference
        self._spec = EncoderSpec(**encoder) if similarity == "embedding" and encoder else None
        self._reference_term = lru_cache(maxsize=2)(self._mean_reference_similarity)

    def score(self, targets: Sequence[str], synthetic: Corpus, references: Sequence[Corpus]) -> np.ndarray:
        """sim_syn(x) - mean_m sim_ref_m(x) per target (sim_syn(x) alone when `reference` is off)."""
        closest = self.closest(tuple(targets), synthetic.texts)
        if not self.reference:
            return closest
        if not references:
            raise ConfigError(
                "attack 'similarity' with reference=true needs reference corpora; set "
                "attack.similarity.reference=false for the synthetic-only variant"
            )
        return closest - self._reference_term(tuple(targets), tuple(tuple(ref.texts) for ref in references))

    def closest(self, targets: tuple[str, ...], texts: Sequence[str]) -> np.ndarray:
        """Per target, the mean similarity of its k most similar documents among `texts`."""
        return top_k_mean(self.similarities(targets, texts), self.k)

    def similarities(self, targets: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        """(targets x texts) the configured similarity: embedding cosine, InDel ratio or n-gram Jaccard."""
        if self._spec is not None:
            if not len(texts) or not len(targets):
                return np.zeros((len(targets), len(texts)))
            return self.embed(targets) @ self.embed(texts).T
        if self.similarity == "levenshtein":
            return indel_ratio_matrix(targets, texts)
        return jaccard_matrix(targets, texts, self.unit, self.n)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) unit-length embeddings; texts not seen before are encoded in one batch."""
        assert self._spec is not None
        kept = text_vectors(self._spec)
        missing = list(dict.fromkeys(t for t in texts if t not in kept))
        if len(kept) + len(missing) > MAX_KEPT_VECTORS:
            kept.clear()
            missing = list(dict.fromkeys(texts))
        if missing:
            kept.update(zip(missing, unit_rows(EmbeddingCache(self._spec).embed(missing))))
        return np.stack([kept[t] for t in texts]) if len(texts) else np.zeros((0, 1))

    def _mean_reference_similarity(
        self, targets: tuple[str, ...], references: tuple[tuple[str, ...], ...]
    ) -> np.ndarray:
        return np.mean([self.closest(targets, ref) for ref in references], axis=0)
