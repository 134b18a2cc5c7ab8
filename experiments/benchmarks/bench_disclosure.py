"""The disclosure check at MIMIC scale: seconds for 10,000 private and 10,000 unseen notes of 1,500 words.

Made-up discharge-summary-like notes (`synbench.testing.corpora.templated_notes`:
3 templates of 10 sections, 100 boilerplate words each section shares across
its template's notes, then 50 words of the note's own), 10,000 a side; the
release is 10,000 notes: 500 private notes verbatim (5%), 200 private notes
with every other word swapped, and fresh notes of the same templates (their
boilerplate shared with every group). Timed once, end to end
(`disclosure_counts` and `disclosure_test`: normalising, run hashes, MinHash
candidates, LCS), on this machine's cores as they are. Also written: the
counts and the test's status, so the figure says what it computed. Run:
`make bench BENCH=disclosure`.
"""

from __future__ import annotations

import random
import time
from typing import Any

from synbench.audit.config import DisclosureOptions
from synbench.audit.disclosure import disclosure_counts, disclosure_test
from synbench.testing.corpora import templated_notes

SIDE, VERBATIM, SWAPPED = 10_000, 500, 200
SECTIONS, BOILERPLATE, FILL = 10, 100, 50  # 1,500 words a note
ALPHA = 0.05


def swapped(text: str, rng: random.Random, words: list[str]) -> str:
    """`text` with every other word replaced by a random one of `words`."""
    return " ".join(w if i % 2 == 0 else rng.choice(words) for i, w in enumerate(text.split()))


def main() -> dict[str, Any]:
    shape = {"sections": SECTIONS, "boilerplate_words": BOILERPLATE, "fill_words": FILL}
    private, unseen, fresh = (templated_notes(SIDE, seed, **shape) for seed in (1, 2, 3))
    rng = random.Random(0)
    vocabulary = sorted(set(fresh[0].split()))
    released = (
        private[:VERBATIM]
        + [swapped(text, rng, vocabulary) for text in private[VERBATIM : VERBATIM + SWAPPED]]
        + fresh[: SIDE - VERBATIM - SWAPPED]
    )
    rule = DisclosureOptions()
    start = time.perf_counter()
    found = disclosure_test(disclosure_counts(private, unseen, released, rule), ALPHA, rule)
    seconds = time.perf_counter() - start
    return {
        "documents_per_side": SIDE,
        "words_per_document": SECTIONS * (BOILERPLATE + FILL),
        "released_verbatim": VERBATIM,
        "released_swapped": SWAPPED,
        "seconds": round(seconds, 1),
        **{k: found[k] for k in ("private_reappear", "n_private", "unseen_reappear", "n_unseen", "status")},
    }
