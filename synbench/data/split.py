"""Train / eval splitting and seeded subsampling, shared by every loader.

A dataset without its own eval split gets one by holding out `eval_fraction`
of train; `max_train` / `max_eval` then take seeded subsamples (a quick run
on a big corpus). The seed is the dataset's `split_seed`, never the job's, so
every seed of a sweep scores on the same eval set. Where documents share a
group (a patient's admissions, a review's sentences) the hold-out keeps each
group on one side, so no patient or review is in both splits. Asking for
more documents than exist is an error, not a silent shortfall: a sweep that
silently trains on fewer documents than its config says would report numbers
for a setting that never ran.

`min_eval_per_class` tops the eval split up so that every label has at least
that many eval documents where the training split can spare them: macro F1
averages the labels' F1 alike, so a class with 3 eval documents decides
much of it (it carried 43% of a baseline's macro-F1 variance on the demo
task). Train documents of a short label move to eval in a seeded order
(whole groups, where documents share one), at most half of that label's
training documents, so the change to the publisher's split is the least
that gives each label its minimum; only the total moved is logged.
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

from synbench.core.base import Splits
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError, DataError

log = logging.getLogger(__name__)


def _subsample(
    corpus: Corpus, limit: int | None, key: str, what: str, dataset: str, rng: np.random.Generator
) -> np.ndarray:
    """Sorted positions of a seeded sample of `limit` documents (all of them when `limit` is None)."""
    n = len(corpus)
    if limit is None:
        return np.arange(n)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigError(f"dataset.{key}={limit!r} is not a positive whole number; set it to one, or null for all")
    if limit > n:
        raise DataError(
            f"dataset '{dataset}' has {n} {what} documents but {key}={limit}; "
            f"set dataset.{key}={n} or lower, or dataset.{key}=null to use all of them"
        )
    return np.sort(rng.choice(n, size=limit, replace=False))


def _hold_out(
    train: Corpus, fraction: float, dataset: str, seed: int, groups: Sequence[str] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Positions of (train, eval) when `fraction` of train (in (0, 1): the dataset config checks it) is held out,
    shuffled by `default_rng(seed)`; with `groups` (one per document) whole groups are held out, in a shuffled
    order, until the eval split holds at least that share."""
    n = len(train)
    n_eval = int(round(n * fraction))
    if n_eval < 1 or n_eval >= n:
        raise DataError(
            f"dataset '{dataset}' has {n} training documents; eval_fraction={fraction} leaves "
            f"{'no eval' if n_eval < 1 else 'no training'} documents; add documents, change "
            f"dataset.eval_fraction, or provide a separate eval split"
        )
    if groups is None:
        order = np.random.default_rng(seed).permutation(n)
        return np.sort(order[n_eval:]), np.sort(order[:n_eval])
    names = sorted(set(groups))  # a fixed order to shuffle, whatever order the release lists its documents in
    number = {name: i for i, name in enumerate(names)}
    member = np.array([number[g] for g in groups])
    order = np.random.default_rng(seed).permutation(len(names))
    held_sizes = np.cumsum(np.bincount(member, minlength=len(names))[order])  # documents held out after each group
    is_eval = np.isin(member, order[: int(np.searchsorted(held_sizes, n_eval)) + 1])
    if is_eval.all():
        raise DataError(
            f"dataset '{dataset}': holding out eval_fraction={fraction} of {n} training documents by group takes "
            f"all {len(names)} group(s), leaving no training documents; lower dataset.eval_fraction or add documents"
        )
    return np.flatnonzero(~is_eval), np.flatnonzero(is_eval)


def make_splits(
    train: Corpus,
    eval: Corpus | None,
    *,
    name: str,
    seed: int,
    eval_fraction: float,
    max_train: int | None,
    max_eval: int | None,
    groups: Sequence[str] | None = None,
    min_eval_per_class: int,
) -> Splits:
    """The final `Splits` of dataset `name`, as corpora `<name>-train` and `<name>-eval`.

    Without `eval`, `eval_fraction` of train is held out (whole `groups`,
    one per train document, when given). The subsamples use their own seeded
    streams, so changing `max_train` never changes which eval documents are
    drawn, and the same seed always gives the same splits.
    """
    if eval is None:
        train_idx, eval_idx = _hold_out(train, eval_fraction, name, seed, groups)
        groups = [groups[i] for i in train_idx] if groups is not None else None
        train, eval = train.subset(train_idx), train.subset(eval_idx)
    if min_eval_per_class:
        moved = top_up(train, eval, min_eval_per_class, np.random.default_rng((seed, 3)), groups)
        if len(moved):
            log.info("dataset '%s': moved %d training documents to eval (min_eval_per_class)", name, len(moved))
            kept = np.setdiff1d(np.arange(len(train)), moved)
            eval = Corpus.build(
                [*eval.texts, *(train.texts[i] for i in moved)],
                [*eval.labels, *(train.labels[i] for i in moved)],
                eval.label_space,
                ids=[*eval.ids, *(train.ids[i] for i in moved)],
                multi_label=eval.multi_label,
                name=eval.name,
            )
            train = train.subset(kept)
    keep_train = _subsample(train, max_train, "max_train", "training", name, np.random.default_rng((seed, 1)))
    keep_eval = _subsample(eval, max_eval, "max_eval", "eval", name, np.random.default_rng((seed, 2)))
    return Splits(
        train=train.subset(keep_train, name=f"{name}-train"), eval=eval.subset(keep_eval, name=f"{name}-eval")
    )


def top_up(
    train: Corpus, eval: Corpus, minimum: int, rng: np.random.Generator, groups: Sequence[str] | None = None
) -> np.ndarray:
    """Sorted positions of the training documents that move to eval so that each label of the label space (in its
    order) has `minimum` eval documents, taking at most half of a label's training documents; with `groups`, a
    document moves with its whole group."""
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 0:
        raise ConfigError(f"dataset.min_eval_per_class={minimum!r} must be a whole number >= 0 (0: the split as is)")
    in_eval = {label: sum(label in labels for labels in eval.labels) for label in train.label_space}
    moved: set[int] = set()
    members: dict[str, list[int]] = {}
    for i, group in enumerate(groups or ()):
        members.setdefault(group, []).append(i)
    for label in train.label_space:
        holders = [i for i, labels in enumerate(train.labels) if label in labels]
        spare = len(holders) // 2 - sum(i in moved for i in holders)
        for i in rng.permutation(holders):
            if in_eval[label] >= minimum or spare <= 0:
                break
            if int(i) in moved:
                continue
            batch = members[groups[int(i)]] if groups is not None else [int(i)]
            for j in batch:
                moved.add(j)
                for other in train.labels[j]:
                    in_eval[other] = in_eval.get(other, 0) + 1
            spare -= sum(label in train.labels[j] for j in batch)
    return np.array(sorted(moved), dtype=int)
