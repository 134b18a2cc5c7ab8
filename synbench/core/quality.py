"""Output honesty: empty and degenerate synthetic texts, counted for every generator and never dropped.

A generator that writes nothing, one word over and over, or mostly symbols
would look better than it is if such texts were filtered out; the tasks count
them once, for every generator's output, in `generation`. The paper reports
that DP diffusion collapses to such text at small eps; DP-Gen can too.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

MIN_DISTINCT_WORDS = 3  # fewer distinct words than this: not a document
MAX_WORD_SHARE = 0.5  # one word more than half of the text: a repetition loop
MIN_LETTER_SHARE = 0.5  # fewer letters than this share of the non-space characters: mostly symbols or digits
WORD = re.compile(r"\S+")


def is_degenerate(text: str) -> bool:
    """A non-empty text too short, too repetitive, or too little made of letters to be a document."""
    words = WORD.findall(text.lower())
    if not words:
        return False
    chars = "".join(words)
    return (
        len(set(words)) < MIN_DISTINCT_WORDS
        or Counter(words).most_common(1)[0][1] > MAX_WORD_SHARE * len(words)
        or sum(c.isalpha() for c in chars) < MIN_LETTER_SHARE * len(chars)
    )


def output_health(texts: Sequence[str]) -> dict[str, float]:
    """Counts and shares of empty and degenerate texts (statistics of the DP output, so public)."""
    n = max(len(texts), 1)
    n_empty = sum(not t.strip() for t in texts)
    n_degenerate = sum(is_degenerate(t) for t in texts)
    return {
        "n_empty": n_empty,
        "n_degenerate": n_degenerate,
        "empty_share": n_empty / n,
        "degenerate_share": n_degenerate / n,
    }
