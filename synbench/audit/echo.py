"""`attack=run_echo`: the longest run of a target's own words that the release repeats in order.

The similarity attacks compare whole documents, so a release that keeps a
few words of each private document in order and pads them with filler (a
prefix leak: the first words of every record, then generic text) scores
barely above chance there: a 6-word run is a small share of a 25-word
canary. Read as a run it is unmistakable: natural text shares 3- or 4-word
phrases by chance, rarely 6 in a row. score(x) is the length, in words, of
the longest run of x's consecutive words (the attacks' lower-cased words,
synbench.audit.similarity.words) that some released document holds
consecutively; larger means member. It reads the release and the targets
only (no references: a canary's source document in D_aux shares its prefix
by construction, so a reference would hide exactly the leak this attack
looks for). `max_run` caps the search: a run that long is already a copy.

Every run of n words gets a 64-bit id from a polynomial hash of its word
ids, one array operation per length over every target and released
document at once, so a release of thousands of documents takes well under a
second per audit run.
"""

from __future__ import annotations

from itertools import chain
from typing import Sequence

import numpy as np

from synbench.audit.similarity import words
from synbench.core.base import Attack
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError

HASH_BASE = np.uint64(0x9E3779B97F4A7C15)  # an odd 64-bit multiplier (the golden ratio's): runs hash apart


def word_ids(texts: Sequence[Sequence[str]], vocabulary: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(ids of every word end to end, the document of each position), the ids from one shared vocabulary."""
    ids = np.fromiter(
        (vocabulary.setdefault(w, len(vocabulary) + 1) for w in chain.from_iterable(texts)), dtype=np.uint64
    )
    doc = np.repeat(np.arange(len(texts)), [len(t) for t in texts])
    return ids, doc


class RunEchoAttack(Attack):
    """The longest run of a target's consecutive words some released document holds in order (module docstring).
    Larger means member."""

    def __init__(self, max_run: int = 64) -> None:
        if max_run < 1:
            raise ConfigError(f"attack.run_echo.max_run={max_run!r} must be a positive whole number of words")
        self.max_run = max_run

    def score(self, targets: Sequence[str], synthetic: Corpus, references: Sequence[Corpus]) -> np.ndarray:
        vocabulary: dict[str, int] = {}
        target_ids, target_doc = word_ids([words(t) for t in targets], vocabulary)
        release_ids, release_doc = word_ids([words(t) for t in synthetic.texts], vocabulary)
        longest = np.zeros(len(targets))
        target_key, release_key = target_ids.copy(), release_ids.copy()
        for n in range(1, self.max_run + 1):
            if n > 1:  # the run of n words at i: the run of n - 1 at i, then the word at i + n - 1
                target_key = target_key[:-1] * HASH_BASE + target_ids[n - 1 :]
                release_key = release_key[:-1] * HASH_BASE + release_ids[n - 1 :]
            # a run counts only inside one document: its first and last positions in the same one
            own = target_doc[: len(target_key)] == target_doc[n - 1 :]
            held = release_key[release_doc[: len(release_key)] == release_doc[n - 1 :]]
            found = own & np.isin(target_key, held)
            if not found.any():
                break
            longest[np.unique(target_doc[: len(target_key)][found])] = n
        return longest
