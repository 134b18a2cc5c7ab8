"""Exact n-gram exposure of private documents in an infini-gram index.

For each document (tokenized with the public model's tokenizer) the engine's
`creativity` query gives, for every start position l, the longest span
x[l:r] that occurs verbatim in the indexed corpus. From it: the longest
exact match (tokens), and the share of the document's n-grams found in the
corpus (position l starts a found n-gram when r - l >= n). A document is
flagged when that share reaches `flag_share` or its longest match reaches
`flag_longest` tokens. The scores stay in memory and in the job folder; only
the shares flagged leave the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from synbench.contamination.config import ExactOptions
from synbench.contamination.index import IndexInfo
from synbench.core.errors import SynBenchError


@dataclass(frozen=True)
class ExactScores:
    longest: np.ndarray  # longest exact match per document, tokens
    ngram_share: np.ndarray  # share of the document's n-grams found (0 for a document shorter than n)
    flagged: np.ndarray  # bool


def open_engine(index: IndexInfo, eos_token_id: int) -> Any:
    from infini_gram.engine import InfiniGramEngine

    vocab = 2**16 - 1 if index.token_dtype == "u16" else 2**32 - 1
    return InfiniGramEngine(
        index_dir=str(index.path), eos_token_id=int(eos_token_id), vocab_size=vocab, token_dtype=index.token_dtype
    )


def match_lengths(engine: Any, ids: Sequence[int]) -> np.ndarray:
    """For every position l, the length of the longest prefix of ids[l:] found in the index."""
    if not ids:
        return np.zeros(0, dtype=np.int64)
    answer = engine.creativity(input_ids=[int(i) for i in ids])
    if "error" in answer:
        raise SynBenchError(f"infini-gram query failed: {answer['error']}")
    return np.asarray(answer["rs"], dtype=np.int64) - np.arange(len(ids))


def exact_scores(engine: Any, token_ids: Sequence[Sequence[int]], cfg: ExactOptions) -> ExactScores:
    longest, share = np.zeros(len(token_ids), dtype=np.int64), np.zeros(len(token_ids))
    for i, ids in enumerate(token_ids):
        lengths = match_lengths(engine, list(ids)[: cfg.max_length])
        longest[i] = int(lengths.max()) if lengths.size else 0
        starts = lengths[: max(lengths.size - cfg.n + 1, 0)]
        share[i] = float((starts >= cfg.n).mean()) if starts.size else 0.0
    return ExactScores(longest, share, (share >= cfg.flag_share) | (longest >= cfg.flag_longest))
