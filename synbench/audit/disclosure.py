"""The disclosure check: how many private documents the release reproduces (near-)verbatim, against unseen ones.

A membership audit's bound is capped by its design: with a few hundred
trials no attack, however perfect, certifies more than a few units of
epsilon, so a program that releases its private documents as they are and
claims eps=8 passes the audit. Counting copies is not capped. This check counts how many
of the private documents the generator saw reappear in its release ("k of n
private documents reappear"), how many real documents it never saw do
("j of m unseen ones do"), and tests whether private documents reappear more
often: Fisher's exact test, one-sided, on the 2x2 table
[[k, n - k], [j, m - j]]. It is flagged when p < alpha, the audit's level
(1 - audit.confidence, 0.05 by default). Unseen documents set the reference:
short or boilerplate documents can reappear by chance, and they do so as often
in either group, so an honest generator is not flagged, while a copier is at
any eps.

The unseen documents are the eval split (task=benchmark), or, for the first
run of task=audit, every document of the audit pool outside that run's private
set (D_aux, the targets and canaries it left out, and in k_subsets the rest of
D_prv; a canary counts once, whatever its copies).

Rule (`DisclosureConfig`, synbench/audit/config.py). Each text is
normalised: Unicode NFKC, lower-cased, split into the word tokens of the
attacks' Jaccard similarity (`synbench.audit.similarity.words`: runs of
letters, digits or underscores; punctuation and whitespace dropped). A
document of n words reappears when one released document

- holds a run of min(n, run_words) of its consecutive words (8 by default: an
  8-word run of natural text is rarely shared by chance, where 4- to 6-word
  phrases such as "i have been taking this for" are common), or
- for n >= run_words, holds at least min_share (0.45 by default) of the
  longer document's words in order: LCS >= min_share * max(n, m) for a
  released document of m words, LCS their longest common subsequence of
  words. A copier that swaps every
  other word for a random word leaves no two consecutive words, so no run
  rule can see it, but it keeps about half the words in order: a little
  under half where a swapped word held two tokens ("don't" is "don", "t"),
  hence 0.45, while unrelated documents of the same domain share far fewer
  (tests/test_disclosure.py checks both on the demo corpus). Dividing by
  the longer document stops a long released text, which holds many common
  words in some order, from matching every short document.

A document whose text also lies in the other group (a duplicate in the
source data, a canary and the D_aux document its first words come from) tells
nothing about which group the generator saw: by the same rule, a private
document that the unseen documents reproduce, and an unseen one that the
private documents reproduce, are left out of both counts (`n_shared`).

Speed: every run of w words gets an exact id, one factorisation per width
over all groups at once, so runs are compared with array operations (no
Python loop per word); for the in-order rule, a document pair can reach the
LCS threshold only if its multiset word overlap does (LCS <= overlap), which
one sparse product of word-occurrence indicators gives for every pair, so
rapidfuzz's LCS runs on the few pairs that pass. A few thousand documents a
side take seconds.

Only counts and the test leave this module: no text, id or digest.
"""

from __future__ import annotations

import logging
import unicodedata
from dataclasses import dataclass
from itertools import chain
from typing import Any, Mapping, MutableMapping, Sequence

import numpy as np
import pandas as pd
from rapidfuzz.distance import LCSseq
from scipy import sparse
from scipy.stats import fisher_exact

from synbench.audit.config import DisclosureConfig
from synbench.audit.design import AuditDesign
from synbench.audit.similarity import words

log = logging.getLogger(__name__)

SECTION = "disclosure"  # the results.json section
ROWS_PER_PRODUCT = 512  # query documents per sparse product of the in-order rule: bounds its memory
SHARE_TOLERANCE = 1e-9  # min_share * length as a float may miss a whole number it should be (0.29 * 100)


def normalised_words(texts: Sequence[str]) -> list[list[str]]:
    """Each text's word tokens after Unicode NFKC: the attacks' lower-cased words, punctuation dropped."""
    return [words(unicodedata.normalize("NFKC", text)) for text in texts]


@dataclass(frozen=True)
class Documents:
    """Tokenised documents and the same as word ids of one shared vocabulary (`encode`): `ids` end to end,
    `lengths` per document."""

    tokens: list[list[str]]
    ids: np.ndarray
    lengths: np.ndarray

    def occurrences(self) -> tuple[np.ndarray, np.ndarray]:
        """(document, rank) of every word: rank k for its (k + 1)-th occurrence in its document. Two documents share
        as many (word, rank) pairs as their multiset overlap, the sum over words of min(count_a(w), count_b(w))."""
        doc = np.repeat(np.arange(len(self.lengths)), self.lengths)
        order = np.lexsort((np.arange(len(doc)), self.ids, doc))
        same = np.r_[False, (doc[order][1:] == doc[order][:-1]) & (self.ids[order][1:] == self.ids[order][:-1])]
        first = np.maximum.accumulate(np.where(same, 0, np.arange(len(doc))))
        rank = np.empty(len(doc), dtype=np.int64)
        rank[order] = np.arange(len(doc)) - first
        return doc, rank


def encode(*groups: list[list[str]]) -> list[Documents]:
    """Each group of tokenised documents as `Documents` over one vocabulary (so ids compare across groups)."""
    flat = list(chain.from_iterable(chain.from_iterable(groups)))
    codes = pd.factorize(pd.Series(flat, dtype=object))[0].astype(np.int64) if flat else np.zeros(0, np.int64)
    out, at = [], 0
    for group in groups:
        lengths = np.array([len(doc) for doc in group], dtype=np.int64)
        out.append(Documents(group, codes[at : at + int(lengths.sum())], lengths))
        at += int(lengths.sum())
    return out


def shared_runs(groups: Sequence[Documents], run_words: int) -> list[np.ndarray]:
    """Per group, a (documents x groups) table: does group g hold, inside one of its documents, min(n, run_words)
    consecutive words of the document (n its length; never for an empty one)?

    A run of w words gets an exact id from the ids of its first w - 1 words and its last word, one factorisation
    per width over every group at once, so the groups are compared with array operations only.
    """
    ids = np.concatenate([g.ids for g in groups])
    lengths = np.concatenate([g.lengths for g in groups])
    group = np.repeat(np.arange(len(groups)), [len(g.lengths) for g in groups])
    doc = np.repeat(np.arange(len(lengths)), lengths)  # of each position
    end = np.cumsum(lengths)[doc]  # one past its document's last position
    width_of = np.minimum(lengths, run_words)  # the run each document must share
    found = np.zeros((len(lengths), len(groups)), dtype=bool)
    key, vocabulary = ids, int(ids.max(initial=0)) + 1
    for width in range(1, int(width_of.max(initial=0)) + 1):
        if width > 1:  # the run of `width` words at i: the run of width - 1 at i, then the word at i + width - 1
            key = pd.factorize(key[:-1] * vocabulary + ids[width - 1 :])[0]
        inside = np.flatnonzero(np.arange(len(key)) + width <= end[: len(key)])
        asked = inside[width_of[doc[inside]] == width]
        for g in range(len(groups)):
            held = np.zeros(len(key), dtype=bool)
            held[key[inside[group[doc[inside]] == g]]] = True
            found[doc[asked[held[key[asked]]]], g] = True
    bounds = np.cumsum([0, *(len(g.lengths) for g in groups)])
    return [found[start:stop] for start, stop in zip(bounds[:-1], bounds[1:])]


def overlap_rows(*groups: Documents) -> list[sparse.csr_matrix]:
    """Per group, (documents x features) 0/1 rows of (word, rank) pairs over features shared by the groups: the
    product of two documents' rows is their multiset word overlap."""
    occurrences = [g.occurrences() for g in groups]
    width = max(int(rank.max(initial=0)) for _, rank in occurrences) + 1
    keys = [g.ids * width + rank for g, (_, rank) in zip(groups, occurrences)]
    features, uniques = pd.factorize(np.concatenate(keys))
    bounds = np.cumsum([0, *map(len, keys)])
    return [
        sparse.csr_matrix(
            (np.ones(len(doc), dtype=np.int32), (doc, features[start:stop])), shape=(len(g.lengths), len(uniques))
        )
        for g, (doc, _), start, stop in zip(groups, occurrences, bounds[:-1], bounds[1:])
    ]


def in_order(queries: Documents, release: Documents, min_share: float, docs: np.ndarray) -> np.ndarray:
    """Per query document in `docs`: does one released document hold, in order, at least min_share times the longer
    one's words (at least one)? Only pairs whose multiset overlap reaches that count are compared."""
    found = np.zeros(len(queries.lengths), dtype=bool)
    if not len(docs) or not len(release.lengths):
        return found
    query_rows, release_rows = overlap_rows(queries, release)
    release_columns = release_rows.T.tocsr()
    for start in range(0, len(docs), ROWS_PER_PRODUCT):
        chunk = docs[start : start + ROWS_PER_PRODUCT]
        overlap = (query_rows[chunk] @ release_columns).tocoo()
        query, released = chunk[overlap.row], overlap.col
        longer = np.maximum(queries.lengths[query], release.lengths[released])
        needed = np.maximum(np.ceil(min_share * longer - SHARE_TOLERANCE), 1).astype(np.int64)
        keep = np.flatnonzero(overlap.data >= needed)
        keep = keep[np.lexsort((-overlap.data[keep], query[keep]))]  # per query, the largest overlaps first
        for q, r, need in zip(query[keep], released[keep], needed[keep]):
            if not found[q] and LCSseq.similarity(queries.tokens[q], release.tokens[r], score_cutoff=int(need)):
                found[q] = True
    return found


def reproduced(queries: Documents, other: Documents, by_run: np.ndarray, config: DisclosureConfig) -> np.ndarray:
    """Per query document: does `other` reproduce it, verbatim (`by_run`, from `shared_runs`) or near-verbatim (in
    order, for documents of at least run_words words)?"""
    undecided = np.flatnonzero(~by_run & (queries.lengths >= config.run_words))
    return by_run | in_order(queries, other, config.min_share, undecided)


def disclosure_counts(
    private: Sequence[str], unseen: Sequence[str], released: Sequence[str], config: DisclosureConfig
) -> dict[str, int]:
    """How many private and unseen documents the released texts reproduce, and how many were left out of both
    groups because the other group reproduces them (`n_shared`). Counts only: no text, no position."""
    groups = encode(*map(normalised_words, (private, unseen, released)))
    private_docs, unseen_docs, release = groups
    (private_runs, unseen_runs, _) = shared_runs(groups, config.run_words)
    shared_private = reproduced(private_docs, unseen_docs, private_runs[:, 1], config)
    shared_unseen = reproduced(unseen_docs, private_docs, unseen_runs[:, 0], config)
    private_found = reproduced(private_docs, release, private_runs[:, 2], config)
    unseen_found = reproduced(unseen_docs, release, unseen_runs[:, 2], config)
    return {
        "private_reappear": int((private_found & ~shared_private).sum()),
        "n_private": int((~shared_private).sum()),
        "unseen_reappear": int((unseen_found & ~shared_unseen).sum()),
        "n_unseen": int((~shared_unseen).sum()),
        "n_shared": int(shared_private.sum() + shared_unseen.sum()),
    }


def rule_text(config: DisclosureConfig) -> str:
    """The rule as results.json states it: the run length and the in-order share."""
    return f"{config.run_words}-word run, or LCS >= {config.min_share:g} of the longer (NFKC lower-cased words)"


def disclosure_test(counts: Mapping[str, int], alpha: float, config: DisclosureConfig) -> dict[str, Any]:
    """The counts with Fisher's exact one-sided p-value that private documents reappear more often than unseen ones,
    `flagged` when p < alpha, and the rule."""
    k, n, j, m = (int(counts[key]) for key in ("private_reappear", "n_private", "unseen_reappear", "n_unseen"))
    p_value = float(fisher_exact([[k, n - k], [j, m - j]], alternative="greater").pvalue) if n and m else 1.0
    return {**counts, "p_value": p_value, "flagged": bool(p_value < alpha), "rule": rule_text(config)}


def audit_groups(design: AuditDesign, pool_size: int, run: int) -> tuple[np.ndarray, np.ndarray]:
    """(private, unseen) positions of the audit pool for private set `run`: each document once (a canary's first
    copy), the unseen ones everything outside the set."""
    later_copies = np.array(
        [first + copy for first, copies in zip(design.targets, design.copies) for copy in range(1, copies)],
        dtype=np.int64,
    )
    private = np.setdiff1d(design.private_set(run), later_copies)
    unseen = np.setdiff1d(np.arange(pool_size), np.concatenate([private, later_copies]))
    return private, unseen


def record_disclosure(results: MutableMapping[str, Any], found: Mapping[str, Any]) -> list[str]:
    """Write `found` as the results' `disclosure` section, named an operator's diagnostic (`diagnostic_outputs`), log
    its line, and return its keys for `non_dp_outputs`: counts of private data without noise, like the audit's."""
    results[SECTION] = dict(found)
    keys = [f"{SECTION}.{key}" for key in sorted(found)]
    results["diagnostic_outputs"] = sorted({*results.get("diagnostic_outputs", []), *keys})
    log.info(
        "disclosure: %d of %d private documents reappear (near-)verbatim; %d of %d unseen ones do (p=%.3g; %d left "
        "out as shared text)%s",
        found["private_reappear"],
        found["n_private"],
        found["unseen_reappear"],
        found["n_unseen"],
        found["p_value"],
        found["n_shared"],
        ": FLAGGED, the release reproduces private documents" if found["flagged"] else "",
    )
    return keys
