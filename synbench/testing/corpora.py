"""The kit's own small public corpora, and sentinels planted in a copy that plays the private set.

The texts are made from fixed word lists here (short drug-review-like
sentences over three labels), so they are public, need no download, and are
the same on every machine. `part` selects disjoint slices of the same
distribution, for checks that need several corpora (real against synthetic,
members against non-members). Sentinels are random high-entropy words drawn
afresh from the operating system's entropy (`secrets`) on every call: if one
turns up where only public values may go (a fit report, or the output of a
DP generator), private text has leaked; no generator can know them in advance.
`templated_notes` makes long notes that share boilerplate (made-up words), for
checks that must not be blinded by templated text.
"""

from __future__ import annotations

import re
import secrets
import string
from itertools import product

import numpy as np

from synbench.core.corpus import Corpus

LABELS = ("relief", "side_effect", "no_effect")
_SUBJECTS = ("the new dose", "this tablet", "the evening pill", "my inhaler", "the cream", "the syrup")
_RELIEF = (
    ("eased", "cleared up", "calmed"),
    ("my headache", "the joint pain", "my cough", "the itching"),
    ("within a day", "after a week", "by the morning"),
)
_SIDE_EFFECT = (
    ("made me dizzy", "gave me a rash", "upset my stomach", "kept me awake"),
    ("every night", "for two days", "after each dose"),
)
_NO_EFFECT = (
    ("did nothing for", "barely touched", "never helped"),
    ("my headache", "the joint pain", "my cough", "the itching"),
    ("even at full strength", "after a month", "at all"),
)
# A sentinel word: a fixed prefix (so the kit's own tests can look for any sentinel in a message) and 20 random
# lowercase letters, 26^20 (about 2^94) equally likely values; lowercase, so a generator that lowercases its
# output (an uncased tokenizer) is searched as well.
SENTINEL_PREFIX = "zq"
SENTINEL_LETTERS = 20
SENTINEL_PATTERN = re.compile(SENTINEL_PREFIX + "[a-z]{%d}" % SENTINEL_LETTERS)
# A fixed shuffle of each label's sentences: slices of it are disjoint parts that mix every template.
_ORDER_SEED = 20260513


def _sentences(label: str) -> list[str]:
    """Every sentence the word lists make for `label` (two-label documents join a relief and a side effect)."""
    if label == "relief":
        parts = [(s, *rest) for s, rest in product(_SUBJECTS, product(*_RELIEF))]
    elif label == "side_effect":
        parts = [(s, *rest) for s, rest in product(_SUBJECTS, product(*_SIDE_EFFECT))]
    elif label == "no_effect":
        parts = [(s, *rest) for s, rest in product(_SUBJECTS, product(*_NO_EFFECT))]
    else:  # relief and side effect together
        parts = [(s, v, o, "but it", e) for s, v, o, e in product(_SUBJECTS, *_RELIEF[:2], _SIDE_EFFECT[0])]
    texts = [" ".join(p) for p in parts]
    return [texts[i] for i in np.random.default_rng(_ORDER_SEED).permutation(len(texts))]


def public_corpus(*, multi_label: bool = False, per_label: int = 12, part: int = 0, name: str | None = None) -> Corpus:
    """A small labelled corpus, public and deterministic: `per_label` documents of each label, interleaved.

    The label space is `LABELS`. With `multi_label`, a fourth group of
    documents carries two labels (`relief` and `side_effect`). Parts
    0, 1, 2, ... hold disjoint documents (up to 6 parts of 12 per label).
    """
    groups: list[tuple[tuple[str, ...], list[str]]] = [((label,), _sentences(label)) for label in LABELS]
    if multi_label:
        groups.append((("relief", "side_effect"), _sentences("relief+side_effect")))
    smallest = min(len(texts) for _, texts in groups)
    if per_label < 1 or (part + 1) * per_label > smallest:
        raise ValueError(
            f"public_corpus has {smallest} documents per label: part={part} x per_label={per_label} does not fit"
        )
    texts: list[str] = []
    labels: list[tuple[str, ...]] = []
    for i in range(part * per_label, (part + 1) * per_label):
        for labelset, sentences in groups:
            texts.append(sentences[i])
            labels.append(labelset)
    name = name or f"synbench-testing-{'multi' if multi_label else 'single'}-{part}"
    return Corpus.build(texts, labels, LABELS, multi_label=multi_label, name=name)


_NOTE_SYLLABLES = ("ba", "ce", "di", "fo", "gu", "ha", "je", "ki", "lo", "mu", "na", "pe", "ri", "so", "tu", "va")
_NOTE_TEMPLATE_SEED = 20261207  # the boilerplate is the same in every call: it is what notes share


def templated_notes(
    n: int, seed: int, *, templates: int = 3, sections: int = 10, boilerplate_words: int = 100, fill_words: int = 50
) -> list[str]:
    """`n` made-up clinical-note-like texts that share boilerplate, as discharge summaries do: each note follows one
    of `templates` fixed templates, `sections` sections of `boilerplate_words` words the same in every note of that
    template (and in every call), each followed by `fill_words` words of its own.

    Words are 3-syllable pseudo-words (4,096 of them), fill words drawn with Zipf-like frequencies (a few very
    common words, a long tail), so unrelated notes share common words in some order as natural text does. `seed`
    draws the fill and each note's template: notes of different seeds share boilerplate only.
    """
    vocabulary = np.array(["".join(p) for p in product(_NOTE_SYLLABLES, repeat=3)])
    frequency = 1 / np.arange(1, len(vocabulary) + 1)
    frequency /= frequency.sum()
    fixed = np.random.default_rng(_NOTE_TEMPLATE_SEED)
    boilerplate = vocabulary[fixed.integers(0, len(vocabulary), (templates, sections, boilerplate_words))]
    rng = np.random.default_rng(seed)
    template = rng.integers(0, templates, n)
    fill = vocabulary[rng.choice(len(vocabulary), (n, sections, fill_words), p=frequency)]
    return [
        " ".join(w for s in range(sections) for part in (boilerplate[t, s], fill[i, s]) for w in part)
        for i, t in enumerate(template)
    ]


def sentinel_word() -> str:
    """A fresh sentinel: `SENTINEL_PREFIX` and `SENTINEL_LETTERS` lowercase letters from `secrets` (94 random bits)."""
    return SENTINEL_PREFIX + "".join(secrets.choice(string.ascii_lowercase) for _ in range(SENTINEL_LETTERS))


def plant_sentinels(corpus: Corpus, every: int = 4) -> tuple[Corpus, tuple[str, ...]]:
    """A copy of `corpus` with a fresh `sentinel_word()` appended to document 0 and every `every`-th one after it.

    Returns the copy and its sentinels (lowercase; search case-insensitively).
    """
    if every < 1:
        raise ValueError(f"every={every} must be at least 1")
    sentinels: list[str] = []
    texts = list(corpus.texts)
    for i in range(0, len(texts), every):
        sentinels.append(sentinel_word())
        texts[i] = f"{texts[i]} {sentinels[-1]}"
    planted = Corpus(
        ids=corpus.ids,
        texts=tuple(texts),
        labels=corpus.labels,
        label_space=corpus.label_space,
        multi_label=corpus.multi_label,
        name=corpus.name,
    )
    return planted, tuple(sentinels)
