"""The disclosure check: how many private documents the release reproduces (near-)verbatim, against unseen ones.

A membership audit's bound is capped by its design: with a few hundred
trials no attack, however perfect, certifies more than a few units of
epsilon, so a program that releases its private documents as they are and
claims eps=8 passes the audit. Counting copies is not capped. This check
counts how many of the private documents the generator saw reappear in its
release ("k of n private documents reappear"), how many real documents it
never saw do ("j of m unseen ones do"), and tests whether private documents
reappear more often. Unseen documents set the reference: short or templated
text reappears by chance as often in either group, so an honest generator is
not flagged, while a copier is at any eps.

Which documents. The unseen documents are the eval split (task=benchmark),
or, for the first run of task=audit, every document of the audit pool
outside that run's private set (D_aux, the targets and canaries it left out,
and in k_subsets the rest of D_prv; a canary counts once, whatever its
copies). Private and unseen documents together are the *pool*.

Rule (`DisclosureOptions`, synbench/audit/config.py). Each text is normalised:
Unicode NFKC, lower-cased, split into the word tokens of the attacks' Jaccard
similarity (`synbench.audit.similarity.words`: runs of letters, digits or
underscores; punctuation and whitespace dropped). A run of `run_words`
consecutive words (8 by default: natural text shares 4- to 6-word phrases
across documents, 8-word runs rarely) is *shared* when two or more pooled
documents hold it. A document's *own text* is the words no shared run
covers: boilerplate, and the words next to it that other documents also
put there, are not its own. Only own text is scored, so boilerplate never
blinds the check and never counts for it:

- verbatim: a document reappears when one released document holds a run of
  run_words words of its own text (a document shorter than run_words: its
  whole text, when no other pooled document holds it as consecutive words);
- near-verbatim: its *content words* are the words of its own text that few
  documents hold (fewer than max(3, COMMON_SHARE = 5%) of the pooled and
  released documents together); a document with at least run_words of them
  reappears when one released document's content words (outside shared runs)
  hold, in order, at least min_share (0.3) of the longer of the two:
  LCS >= min_share * max(n, m), LCS their longest common subsequence. A
  copier that swaps every other word leaves no two consecutive words, so no
  run rule sees it, but it keeps about half the content words in order, while
  unrelated documents keep a tenth at most (the demo corpus: 99th percentile).
  Frequent words are left out because long texts hold many of them in some
  common order (two unrelated 500-word notes share nearly half their words in
  order); dividing by the longer stops a long released text from matching
  every short document.

A document with no run of its own text (a duplicate, a note made of
boilerplate) cannot show which group the generator saw: it is
*uncheckable*, counted (`private_uncheckable`, `unseen_uncheckable`) and left
out of the test, never silently dropped. A canary counts: its prefix comes
from a D_aux document (shared), its suffix words are its own.

Why shared means held by two pooled documents, whichever their groups, not
held by the other group: the test below needs each document's outcome
(checkable; reappears) to be a function of the pooled texts and the release,
the same whichever group a document fell in. Rarity against the other group
alone fails that: a run held by two documents counts twice when both are
private, twice when both are unseen and never when they are split, so
outcomes move in pairs and the exact test's null, which draws documents one
by one, understates the variance. The rule is symmetric: a private and an
unseen document are scored alike.

The test, and why it holds. Under the null the release does not depend on
which pooled documents were private (a generator that learns nothing
document-specific). Documents are assigned at random within strata:

- task=audit: `targets` (outlier targets and canaries: each in the private
  set by its own fair coin), `pool` (the rest: a uniformly random D_prv/D_aux
  split, then in k_subsets a uniformly random base of D_prv; exchangeable) and
  `canary_sources` (the D_aux documents canaries take their first words
  from: unseen in every run, so the canaries' texts reveal them; a stratum
  without private documents adds nothing, but mixed into `pool` it would
  make that stratum's private share look smaller than it is);
- task=benchmark: one stratum (`all`), the dataset's train/eval split, whose
  rule the dataset fixes (a random split makes it exchangeable; a split by
  time or source compares unlike documents, which the reference then shows).

Within a stratum the assignment is exchangeable, so given its margins (its
checkable private and unseen documents and how many of them reappear) the
number of private reappearances is hypergeometric; strata are independent.
The statistic is their sum, whose null distribution is the convolution of the
strata's hypergeometric distributions; the p-value is its upper tail at the
observed sum (one-sided). With one stratum this is Fisher's exact test,
one-sided, on [[k, n - k], [j, m - j]]. It is flagged when p < alpha, the
audit's level (1 - audit.confidence, 0.05 by default). The candidate search
of the near-verbatim rule (below) is a fixed function of the pooled texts and
the release, so it keeps outcomes assignment-free and the test exact; a pair
it misses lowers power, never the level. (With `audit.canary_suffix=rare` a
pooled document that uses a canary's suffix word is revealed as D_prv; such
documents are rare and left in `pool`.)

What it can attribute: `min_flaggable` is the smallest number of private
reappearances flagged when no unseen document reappears, wherever among the
strata they fall (given the group sizes: all k private in stratum s has
p = prod_{i<k_s} (n_s - i) / (n_s + m_s - i), so the worst placement takes the
k largest of these factors). Fewer than that (and at least one) is
`below attribution`, said in words by the job summary
(`synbench.report.summary.disclosure_line`), never as "not flagged". No
checkable private or unseen document (or sizes at which no count could be
flagged) is `could not check`.

Speed (near-linear): words become integer ids; every run of w words gets a
64-bit hash by doubling (log2 w array passes; two different runs share one
with a 2^-64 chance per pair), and one sort per width marks runs shared and
released. Candidate pairs for the near-verbatim rule come from MinHash with
locality-sensitive banding over each content sequence's (word, occurrence)
set (one-permutation hashing, `BANDS` bands of `ROWS` values taken BANDS bins
apart, hashed with the fixed public seed `HASH_SEED`: a parameter of the
algorithm, not privacy noise). LCS >= s * max(n, m) implies a Jaccard
similarity of those sets of at least s / (2 - s); a swapped copy's is about
1/3, where a pair is a candidate with probability 1 - (1 - 1/9)^64 > 0.999
(0.87 at the bound for s = 0.3, 0.18); rapidfuzz's LCS then decides each
candidate exactly. `bench_disclosure` (experiments/benchmarks) times 10,000
documents of 1,500 words a side.

Only counts and the test leave this module: no text, id, position or hash.
"""

from __future__ import annotations

import logging
import math
import unicodedata
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
from rapidfuzz.distance import LCSseq

from synbench.audit.config import DisclosureOptions
from synbench.audit.design import AuditDesign
from synbench.job.record import Disclosure, JobRecord

log = logging.getLogger(__name__)

SECTION = "disclosure"  # the results.json section
FLAGGED, NOT_FLAGGED, BELOW_ATTRIBUTION, NOT_CHECKED = "flagged", "not flagged", "below attribution", "could not check"
ALL, TARGETS, POOL, SOURCES = "all", "targets", "pool", "canary_sources"  # strata
COUNTS = ("private_reappear", "n_private", "unseen_reappear", "n_unseen")  # one stratum's 2x2 table
HASH_SEED = 0x5D15C1057  # public and fixed: the run hashes' and MinHash's parameter, never privacy noise
BANDS, ROWS = 64, 2  # MinHash banding: a pair at Jaccard J is a candidate with probability 1 - (1 - J^2)^64
COMMON_SHARE = 0.05  # a word this share of the pooled and released documents hold is no evidence of copying
SHARE_TOLERANCE = 1e-9  # min_share * length as a float may miss a whole number it should be (0.29 * 100)
EMPTY = np.uint64(2**64 - 1)  # a MinHash bin no feature fell in
LOW32 = np.uint64(2**32 - 1)

Pairs = Callable[["Documents", "Documents", np.ndarray], tuple[np.ndarray, np.ndarray]]


def normalised_words(texts: Sequence[str]) -> list[list[str]]:
    """Each text's word tokens after Unicode NFKC: the attacks' lower-cased words, punctuation dropped."""
    from synbench.audit.similarity import words

    return [words(unicodedata.normalize("NFKC", text)) for text in texts]


@dataclass(frozen=True)
class Documents:
    """Documents as word ids of one shared vocabulary (`encode`), end to end (`ids`), and each one's length."""

    ids: np.ndarray
    lengths: np.ndarray

    @property
    def starts(self) -> np.ndarray:
        return np.cumsum(self.lengths) - self.lengths

    def owners(self) -> np.ndarray:
        """The document of every position."""
        return np.repeat(np.arange(len(self.lengths)), self.lengths)

    def kept(self, keep: np.ndarray) -> Documents:
        """The same documents holding only the positions where `keep` is true, in order."""
        return Documents(self.ids[keep], np.bincount(self.owners()[keep], minlength=len(self.lengths)))

    def sequence(self, doc: int) -> list[int]:
        start = int(self.starts[doc])
        return self.ids[start : start + int(self.lengths[doc])].tolist()


def encode(*groups: Iterable[Sequence[str]], chunk: int = 2000) -> list[Documents]:
    """Each group of tokenised documents as `Documents` over one vocabulary (so ids compare across groups), read
    `chunk` documents at a time: one hash factorisation per chunk, a dictionary look-up per distinct word."""
    import pandas as pd  # here, as scipy and the attack's words below: task=benchmark imports this module to start

    vocabulary: dict[str, int] = {}
    out = []
    for group in groups:
        ids, lengths, documents = [], [], iter(group)
        while batch := list(islice(documents, chunk)):
            lengths += [len(doc) for doc in batch]
            codes, distinct = pd.factorize(np.array(list(chain.from_iterable(batch)), dtype=object))
            known = np.fromiter((vocabulary.setdefault(w, len(vocabulary)) for w in distinct), np.int64, len(distinct))
            ids.append(known[codes])
        out.append(Documents(np.concatenate([np.zeros(0, np.int64), *ids]), np.array(lengths, dtype=np.int64)))
    return out


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (a sort and a comparison: faster than a hash table on millions of integers)."""
    ordered = np.sort(values)
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(ordered) else ordered


def spans(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """start, start + 1, ..., start + count - 1 for each (start, count), concatenated."""
    ends = np.cumsum(counts)
    return np.repeat(starts - (ends - counts), counts) + np.arange(int(ends[-1]) if len(ends) else 0)


def mixed(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection of 64-bit words in which every output bit depends on every input bit."""
    with np.errstate(over="ignore"):
        x = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


def combined(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """One hash of two (an ordered pair: swapping them changes it)."""
    with np.errstate(over="ignore"):
        return mixed(left * np.uint64(0xD6E8FEB86659FD93) + right)


def run_hashes(ids: np.ndarray, width: int) -> np.ndarray:
    """A 64-bit hash of the run of `width` words starting at each position (len(ids) - width + 1 of them; the caller
    keeps those inside one document). By doubling: the run of 2s words from the two runs of s; a width between
    powers of two from two overlapping runs of the power below, which cover it."""
    h = mixed(ids.astype(np.uint64) ^ np.uint64(HASH_SEED))
    span = 1
    while 2 * span <= width:
        h, span = combined(h[:-span], h[span:]), 2 * span
    return combined(h[: len(h) - (width - span)], h[width - span :]) if span < width else h


def run_starts(docs: Documents, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(first position, document) of every run of `width` words inside one document."""
    counts = np.maximum(docs.lengths - width + 1, 0)
    return spans(docs.starts, counts), np.repeat(np.arange(len(docs.lengths)), counts)


def equal_runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first index, length) of each run of equal values in `values` (sorted)."""
    change = np.ones(len(values), dtype=bool)
    change[1:] = values[1:] != values[:-1]
    first = np.flatnonzero(change)
    return first, np.diff(np.append(first, len(values)))


def sorted_member(values: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Per value: is it in `table` (sorted)?"""
    at = np.minimum(np.searchsorted(table, values), max(len(table) - 1, 0))
    return (table[at] == values) if len(table) else np.zeros(len(values), dtype=bool)


@dataclass(frozen=True)
class Runs:
    """The pooled documents' runs of one width: where each starts, its document, whether two or more pooled
    documents hold it (`shared`) and whether a released document does (`released`); and, for the release, where
    its runs that are shared in the pool start (`release_shared`)."""

    start: np.ndarray
    doc: np.ndarray
    shared: np.ndarray
    released: np.ndarray
    release_shared: np.ndarray


def runs_of(pool: Documents, release: Documents, width: int) -> Runs:
    """The pool's runs of `width` words marked shared and released: one sort of their hashes (stable, so a run's
    documents come in order and it is shared when its first and last document differ)."""
    start, doc = run_starts(pool, width)
    hashes = run_hashes(pool.ids, width)[start] if len(start) else np.zeros(0, np.uint64)
    order = np.argsort(hashes, kind="stable")
    ordered, docs = hashes[order], doc[order]
    first, size = equal_runs(ordered)
    shared_group = docs[first] != docs[first + size - 1]
    shared, released = np.empty(len(order), dtype=bool), np.empty(len(order), dtype=bool)
    shared[order] = np.repeat(shared_group, size)
    release_start, _ = run_starts(release, width)
    release_hashes = run_hashes(release.ids, width)[release_start] if len(release_start) else np.zeros(0, np.uint64)
    released[order] = sorted_member(ordered, distinct(release_hashes))
    in_pool_shared = sorted_member(release_hashes, ordered[first[shared_group]])
    return Runs(start, doc, shared, released, release_start[in_pool_shared])


def covered(size: int, starts: np.ndarray, width: int) -> np.ndarray:
    """Per position of `size`: does one of the runs of `width` words starting at `starts` cover it?"""
    steps = (
        np.bincount(starts, minlength=size + width)[:size] - np.bincount(starts + width, minlength=size + width)[:size]
    )
    return np.cumsum(steps) > 0


def signatures(docs: Documents, which: np.ndarray) -> np.ndarray:
    """(len(which), BANDS * ROWS) MinHash of the set of (word, occurrence) pairs of each document of `which` (sorted;
    the k-th "the" is its own element, so the sets' Jaccard similarity is the documents' multiset one):
    one-permutation hashing, one hash per word split into a bin and a value, empty bins filled from the next full one
    (rotation)."""
    bins = BANDS * ROWS
    chosen = docs.kept(np.isin(docs.owners(), which))
    vocabulary = int(chosen.ids.max(initial=0)) + 1
    local = np.repeat(np.arange(len(which)), chosen.lengths[which])
    packed = np.sort(local * vocabulary + chosen.ids)  # by document, then word: a word's occurrences in a row
    first, size = equal_runs(packed)
    occurrence = np.arange(len(packed)) - np.repeat(first, size)
    owner, word = np.divmod(packed, vocabulary)
    h = combined(mixed(word.astype(np.uint64) ^ np.uint64(HASH_SEED)), occurrence.astype(np.uint64))
    bin_of = ((h >> np.uint64(32)) * np.uint64(bins)) >> np.uint64(32)
    flat = np.full(len(which) * bins, EMPTY)
    np.minimum.at(flat, owner.astype(np.int64) * bins + bin_of.astype(np.int64), h & LOW32)
    table = flat.reshape(len(which), bins)
    full = table != EMPTY
    place = np.arange(2 * bins)
    doubled = np.where(np.concatenate([full, full], axis=1), place, 2 * bins)
    following = np.minimum.accumulate(doubled[:, ::-1], axis=1)[:, ::-1][:, :bins]  # next full bin, circularly
    found = following < 2 * bins
    source = np.take_along_axis(table, np.where(found, following % bins, 0), axis=1)
    shift = (following - place[:bins]).astype(np.uint64) << np.uint64(32)  # a filled bin differs from its source
    return np.where(found, source + shift, EMPTY)


def band_keys(signature: np.ndarray) -> np.ndarray:
    """(documents, BANDS) one hash per band of ROWS MinHash values, the band's index in it (bands never meet). A
    band's values lie BANDS bins apart: a filled bin copies its neighbours', and a band of copies of one value
    would let a single shared word make a pair."""
    rows = signature.reshape(len(signature), ROWS, BANDS)
    key = np.broadcast_to(np.arange(BANDS, dtype=np.uint64), (len(signature), BANDS))
    for r in range(ROWS):
        key = combined(key, rows[:, r])
    return key


def minhash_pairs(queries: Documents, release: Documents, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate (query, released document) pairs for the in-order rule, query documents from `which`: those that
    agree on all ROWS values of at least one band; per query, the pairs agreeing on most bands first."""
    released = np.flatnonzero(release.lengths > 0)
    if not len(which) or not len(released):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    query_keys, release_keys = band_keys(signatures(queries, which)), band_keys(signatures(release, released))
    order = np.argsort(release_keys.ravel())
    table = release_keys.ravel()[order]
    keys = query_keys.ravel()
    low, high = np.searchsorted(table, keys, "left"), np.searchsorted(table, keys, "right")
    query = np.repeat(np.repeat(which, BANDS), high - low)
    other = np.repeat(released, BANDS)[order[spans(low, high - low)]]
    pairs, hits = np.unique(query * len(release.lengths) + other, return_counts=True)
    first = np.lexsort((-hits, pairs // len(release.lengths)))
    return pairs[first] // len(release.lengths), pairs[first] % len(release.lengths)


def in_order(queries: Documents, release: Documents, min_share: float, which: np.ndarray, pairs: Pairs) -> np.ndarray:
    """The documents of `which` that one released document holds in order, at least min_share times the longer
    one's words (at least one): rapidfuzz's LCS on the candidate pairs of the right lengths, until one holds."""
    found = np.zeros(len(queries.lengths), dtype=bool)
    query, other = pairs(queries, release, which)
    longer = np.maximum(queries.lengths[query], release.lengths[other])
    needed = np.maximum(np.ceil(min_share * longer - SHARE_TOLERANCE), 1).astype(np.int64)
    fits = np.minimum(queries.lengths[query], release.lengths[other]) >= needed
    texts: dict[tuple[int, int], list[int]] = {}

    def text(side: int, doc: int) -> list[int]:
        if (side, doc) not in texts:
            texts[side, doc] = (queries, release)[side].sequence(doc)
        return texts[side, doc]

    for q, r, need in zip(query[fits].tolist(), other[fits].tolist(), needed[fits].tolist()):
        if not found[q] and LCSseq.similarity(text(0, q), text(1, r), score_cutoff=need):
            found[q] = True
    return found


def frequent_words(*groups: Documents) -> np.ndarray:
    """Per word id: do at least COMMON_SHARE of the documents of all `groups` together hold it, and more than two (a
    document and its copy make two)?"""
    vocabulary = max((int(g.ids.max(initial=-1)) for g in groups), default=-1) + 1
    held = np.zeros(vocabulary, dtype=np.int64)
    for g in groups:
        held += np.bincount(distinct(g.owners() * vocabulary + g.ids) % vocabulary, minlength=vocabulary)
    return held >= max(3, COMMON_SHARE * sum(len(g.lengths) for g in groups))


def reappearing(
    pool: Documents, release: Documents, config: DisclosureOptions, pairs: Pairs = minhash_pairs
) -> tuple[np.ndarray, np.ndarray]:
    """Per pooled document: (checkable: it holds a run of its own text; reappears: the release holds one, or the
    content words of its own text in order). `pairs` finds the in-order rule's candidates (MinHash by default)."""
    width = config.run_words
    checkable = np.zeros(len(pool.lengths), dtype=bool)
    found = np.zeros(len(pool.lengths), dtype=bool)
    for size in np.unique(pool.lengths[(pool.lengths > 0) & (pool.lengths < width)]).tolist():
        runs = runs_of(pool, release, size)  # a short document's run is its whole text
        whole = ~runs.shared & (pool.lengths[runs.doc] == size)
        checkable[runs.doc[whole]] = True
        found[runs.doc[whole & runs.released]] = True
    runs = runs_of(pool, release, width)
    own = ~covered(len(pool.ids), runs.start[runs.shared], width)  # no shared run covers the position
    owned = np.r_[0, np.cumsum(own)]
    mine = owned[runs.start + width] - owned[runs.start] == width  # the run lies in the document's own text
    checkable[runs.doc[mine]] = True
    found[runs.doc[mine & runs.released]] = True
    frequent = frequent_words(pool, release)
    content = pool.kept(own & ~frequent[pool.ids])
    released = release.kept(~covered(len(release.ids), runs.release_shared, width) & ~frequent[release.ids])
    undecided = np.flatnonzero(checkable & ~found & (content.lengths >= width))
    return checkable, found | in_order(content, released, config.min_share, undecided, pairs)


@dataclass(frozen=True)
class Strata:
    """How the pooled documents were assigned: each private and each unseen document's stratum (an index into
    `names`); within a stratum the assignment is exchangeable."""

    names: tuple[str, ...]
    private: np.ndarray
    unseen: np.ndarray


def one_stratum(n_private: int, n_unseen: int) -> Strata:
    """task=benchmark's strata: one (`all`)."""
    return Strata((ALL,), np.zeros(n_private, dtype=np.int64), np.zeros(n_unseen, dtype=np.int64))


def tokenised(texts: Iterable[str]) -> Iterable[list[str]]:
    """The texts' normalised words, one document at a time."""
    from synbench.audit.similarity import words

    return (words(unicodedata.normalize("NFKC", text)) for text in texts)


def count_tables(checkable: np.ndarray, found: np.ndarray, strata: Strata) -> dict[str, Any]:
    """The counts of `reappearing`'s answers (the private documents first, then the unseen ones): checkable private
    and unseen documents and how many reappear, in total and per stratum, and how many were uncheckable."""
    split = len(strata.private)
    reappear = found & checkable
    tables = {
        name: dict(
            zip(
                COUNTS,
                (
                    int(reappear[:split][strata.private == s].sum()),
                    int(checkable[:split][strata.private == s].sum()),
                    int(reappear[split:][strata.unseen == s].sum()),
                    int(checkable[split:][strata.unseen == s].sum()),
                ),
            )
        )
        for s, name in enumerate(strata.names)
    }
    return {
        **{key: sum(table[key] for table in tables.values()) for key in COUNTS},
        "private_uncheckable": int((~checkable[:split]).sum()),
        "unseen_uncheckable": int((~checkable[split:]).sum()),
        "strata": tables,
    }


def disclosure_counts(
    private: Sequence[str],
    unseen: Sequence[str],
    released: Sequence[str],
    config: DisclosureOptions,
    strata: Strata | None = None,
    pairs: Pairs = minhash_pairs,
) -> dict[str, Any]:
    """How many checkable private and unseen documents there are and how many the release reproduces, in total and
    per stratum (`strata`, one by default), and how many were uncheckable. Counts only: no text, no position."""
    pool, release = encode(tokenised(chain(private, unseen)), tokenised(released))
    checkable, found = reappearing(pool, release, config, pairs)
    return count_tables(checkable, found, strata or one_stratum(len(private), len(unseen)))


def tail_probability(tables: Sequence[Mapping[str, int]]) -> float:
    """P(sum of private reappearances >= observed) under the null: per stratum hypergeometric given its margins,
    the sum's distribution their convolution."""
    from scipy.stats import hypergeom

    pmf, low, observed = np.ones(1), 0, 0
    for table in tables:
        k, n, j, m = (int(table[key]) for key in COUNTS)
        observed += k
        if not n or not m or not k + j:  # nothing can move: the stratum adds its count
            low += k
            continue
        support = np.arange(max(0, k + j - m), min(n, k + j) + 1)
        pmf = np.convolve(pmf, hypergeom.pmf(support, n + m, k + j, n))
        low += int(support[0])
    return float(min(1.0, pmf[observed - low :].sum()))


def min_flaggable(tables: Sequence[Mapping[str, int]], alpha: float) -> int | None:
    """The smallest number of private reappearances flagged at `alpha` when no unseen document reappears, wherever
    among the strata they fall; None when no count could be (no checkable private or unseen document)."""
    factors = np.concatenate(
        [np.zeros(0)]
        + [(n - np.arange(n)) / (n + m - np.arange(n)) for n, m in ((t["n_private"], t["n_unseen"]) for t in tables)]
    )
    logs = np.cumsum(np.log(np.sort(factors)[::-1]))
    reach = np.flatnonzero(logs < math.log(alpha))
    return int(reach[0]) + 1 if len(reach) else None


def rule_text(config: DisclosureOptions) -> str:
    """The rule as results.json states it: the run length and the in-order share, on a document's own text."""
    return (
        f"{config.run_words}-word run of its own text (no run two pooled documents share covers it), or LCS >= "
        f"{config.min_share:g} of the longer over own content words (NFKC lower-cased words)"
    )


def method_text(names: Sequence[str]) -> str:
    """The test as results.json states it."""
    if len(names) == 1:
        return "Fisher's exact test, one-sided"
    return f"exact test stratified by assignment ({', '.join(names)}), one-sided"


def disclosure_test(counts: Mapping[str, Any], alpha: float, config: DisclosureOptions) -> dict[str, Any]:
    """The counts with the exact one-sided p-value that private documents reappear more often than unseen ones,
    `flagged` when p < alpha, `min_flaggable`, the `status` in words, the rule and the test. Counts without
    `strata` are one stratum."""
    strata = dict(counts.get("strata") or {ALL: {key: counts[key] for key in COUNTS}})
    tables = list(strata.values())
    p_value, smallest = tail_probability(tables), min_flaggable(tables, alpha)
    k = int(counts["private_reappear"])
    if smallest is None:
        status = NOT_CHECKED
    elif p_value < alpha:
        status = FLAGGED
    elif 0 < k < smallest:
        status = BELOW_ATTRIBUTION
    else:
        status = NOT_FLAGGED
    return {
        **{key: int(counts[key]) for key in COUNTS},
        **{key: int(counts.get(key, 0)) for key in ("private_uncheckable", "unseen_uncheckable")},
        "p_value": p_value,
        "flagged": status == FLAGGED,
        "min_flaggable": smallest,
        "status": status,
        "rule": rule_text(config),
        "test": method_text(list(strata)),
        "strata": strata,
    }


def audit_groups(
    design: AuditDesign, pool_size: int, run: int, sources: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, Strata]:
    """(private, unseen) positions of the audit pool for private set `run`, each document once (a canary's first
    copy), the unseen ones everything outside the set; and their strata: `targets` (a coin each), `pool` (the
    random D_prv/D_aux split), and `canary_sources` (the documents canaries take their first words from:
    `sources`, never private) when there are any."""
    later_copies = np.array(
        [first + copy for first, copies in zip(design.targets, design.copies) for copy in range(1, copies)],
        dtype=np.int64,
    )
    private = np.setdiff1d(design.private_set(run), later_copies)
    unseen = np.setdiff1d(np.arange(pool_size), np.concatenate([private, later_copies]))
    sources = np.zeros(0, np.int64) if sources is None else sources
    names = (TARGETS, POOL, SOURCES) if len(sources) else (TARGETS, POOL)

    def stratum(positions: np.ndarray) -> np.ndarray:
        return np.where(np.isin(positions, design.targets), 0, np.where(np.isin(positions, sources), 2, 1))

    return private, unseen, Strata(names, stratum(private), stratum(unseen))


def record_disclosure(results: JobRecord, found: Mapping[str, Any]) -> list[str]:
    """Write `found` as the results' `disclosure` section, named an operator's diagnostic (`diagnostic_outputs`), log
    its line, and return its keys for `non_dp_outputs`: counts of private data without noise, like the audit's."""
    results.disclosure = Disclosure.of(found)
    keys = [f"{SECTION}.{key}" for key in sorted(found)]
    results.mark_diagnostic(keys)
    reach = found["min_flaggable"]
    log.info(
        "disclosure: %d of %d private documents reappear (near-)verbatim; %d of %d unseen ones do (p=%.3g; %s; %d "
        "private and %d unseen documents uncheckable: no text of their own)",
        found["private_reappear"],
        found["n_private"],
        found["unseen_reappear"],
        found["n_unseen"],
        found["p_value"],
        f"{found['status']}, the test flags from {reach} documents up" if reach else found["status"],
        found["private_uncheckable"],
        found["unseen_uncheckable"],
    )
    return keys
