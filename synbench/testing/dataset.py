"""`check_dataset`: the contracts of a `synbench.core.base.DatasetLoader`, checked from outside.

Every task starts from `load(seed)`: the generator fits on `train`, metrics
score against `eval`, and the classifier of the utility metric maps both onto
one label space. So the kit checks that both splits are non-empty corpora
over the same label space, that every label is in it, and that the same seed
loads the same splits (resume and sweeps rely on it).
"""

from __future__ import annotations

from typing import Callable

from synbench.core.base import DatasetLoader, Splits
from synbench.core.corpus import Corpus
from synbench.testing.checks import begin


def check_dataset(factory: Callable[[], DatasetLoader], *, seed: int = 0) -> None:
    """Check that the loaders `factory()` builds keep the `DatasetLoader` contracts; raise `ConformanceError` if not."""
    first, checks = begin("dataset", factory, DatasetLoader)
    with checks.running("load", f"load(seed={seed})"):
        splits = first.load(seed)
    fix = "return synbench.core.base.Splits(train=<Corpus>, eval=<Corpus>) with documents in both"
    if not isinstance(splits, Splits) or not all(isinstance(c, Corpus) for c in (splits.train, splits.eval)):
        checks.stop(
            "splits", f"load(seed={seed}) returned a {type(splits).__name__}, not Splits of two Corpus objects", fix
        )
    if not (len(splits.train) and len(splits.eval)):
        checks.fail(
            "splits", f"load(seed={seed}) returned {len(splits.train)} train and {len(splits.eval)} eval documents", fix
        )
    train, eval_ = splits.train, splits.eval
    if not train.label_space or (train.label_space, train.multi_label) != (eval_.label_space, eval_.multi_label):
        checks.fail(
            "label-space",
            f"train has label space {train.label_space} (multi_label={train.multi_label}), "
            f"eval {eval_.label_space} (multi_label={eval_.multi_label})",
            "give both splits the one configured, non-empty label space and multi_label flag",
        )
    for name, corpus in (("train", train), ("eval", eval_)):
        outside = sorted({label for ls in corpus.labels for label in ls} - set(corpus.label_space))
        if outside or not all(corpus.labels):
            checks.fail(
                "labels",
                f"{name} has documents with no label or with labels outside its label space "
                f"({len(outside)} such label(s))",
                "label every document from the label space, or reject "
                "the record with a synbench.core.errors.DataError naming its file and line",
            )
    with checks.running("deterministic", f"a second load(seed={seed})"):
        again = factory().load(seed)
    if not all(_same(getattr(splits, s), getattr(again, s, None)) for s in ("train", "eval")):
        checks.fail(
            "deterministic",
            f"two loads with seed={seed} gave different splits",
            "draw every random choice of loading (shuffles, the eval hold-out) from a fixed seed: the dataset's own "
            "(as the built-in loaders' split_seed), so the job seed does not move the eval set either",
        )
    checks.done()


def _same(a: Corpus, b: object) -> bool:
    return isinstance(b, Corpus) and (a.ids, a.texts, a.labels, a.label_space) == (
        b.ids,
        b.texts,
        b.labels,
        b.label_space,
    )
