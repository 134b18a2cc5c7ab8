"""`Corpus`: an immutable, labelled collection of documents."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from synbench.core.errors import DataError

if TYPE_CHECKING:  # numpy is imported where it is used: `import synbench` (the core types) needs none of it
    import numpy as np

Labels = tuple[str, ...]


@dataclass(frozen=True)
class Corpus:
    """Documents with their labels.

    `labels[i]` is the tuple of labels of document i: one label for a
    single-label task, any number (at least one) for a multi-label task.
    `label_space` is the ordered set of valid labels for the task.
    """

    ids: tuple[str, ...]
    texts: tuple[str, ...]
    labels: tuple[Labels, ...]
    label_space: tuple[str, ...]
    multi_label: bool = False
    name: str = "corpus"

    def __post_init__(self) -> None:
        if not (len(self.ids) == len(self.texts) == len(self.labels)):
            raise DataError(
                f"corpus '{self.name}': ids, texts and labels differ in length "
                f"({len(self.ids)}, {len(self.texts)}, {len(self.labels)})"
            )
        if len(set(self.ids)) != len(self.ids):
            # positions, never the id: an id is a record's value
            dup = next(i for i, c in Counter(self.ids).items() if c > 1)
            first, second = [n for n, i in enumerate(self.ids) if i == dup][:2]
            raise DataError(
                f"corpus '{self.name}': the documents at positions {first} and {second} share an id; ids must be unique"
            )
        if not self.multi_label:
            bad = next((i for i, ls in enumerate(self.labels) if len(ls) != 1), None)
            if bad is not None:
                raise DataError(
                    f"corpus '{self.name}' is single-label but the document at position {bad} has "
                    f"{len(self.labels[bad])} labels; set multi_label: true in the dataset config"
                )

    @classmethod
    def build(
        cls,
        texts: Sequence[str],
        labels: Sequence[Iterable[str]],
        label_space: Sequence[str],
        *,
        ids: Sequence[str] | None = None,
        multi_label: bool = False,
        name: str = "corpus",
    ) -> "Corpus":
        """Build a corpus from plain lists; ids default to `"<name>-<i>"`."""
        if ids is None:
            ids = [f"{name}-{i}" for i in range(len(texts))]
        return cls(
            ids=tuple(str(i) for i in ids),
            texts=tuple(texts),
            labels=tuple(tuple(ls) for ls in labels),
            label_space=tuple(label_space),
            multi_label=multi_label,
            name=name,
        )

    @classmethod
    def synthetic(
        cls,
        generator: str,
        texts: Sequence[str],
        labels: Sequence[Iterable[str]],
        label_space: Sequence[str],
        multi_label: bool,
    ) -> "Corpus":
        """A generator's release: documents `<generator>-<i>` in the label space of the corpus it was fitted on,
        named `<generator>-synthetic`."""
        return cls.build(
            texts,
            labels,
            label_space,
            ids=[f"{generator}-{i}" for i in range(len(texts))],
            multi_label=multi_label,
            name=f"{generator}-synthetic",
        )

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, idx: Sequence[int] | np.ndarray, name: str | None = None) -> "Corpus":
        """The documents at positions `idx`, in that order."""
        import numpy as np

        idx = [int(i) for i in np.asarray(idx, dtype=int).ravel()]
        return Corpus(
            ids=tuple(self.ids[i] for i in idx),
            texts=tuple(self.texts[i] for i in idx),
            labels=tuple(self.labels[i] for i in idx),
            label_space=self.label_space,
            multi_label=self.multi_label,
            name=name or self.name,
        )

    def digest(self) -> str:
        """A stable hash of the documents and their labels, in order: caches and checkpoints key on it, never on
        text."""
        h = hashlib.sha256()
        for text, labels in zip(self.texts, self.labels):
            h.update(hashlib.sha256(json.dumps([text, list(labels)]).encode()).digest())
        return h.hexdigest()[:24]

    def label_matrix(self) -> np.ndarray:
        """Binary indicator matrix, shape (n_docs, n_labels), in `label_space` order.

        int64, not a narrow type: scikit-learn casts class indices to the matrix's dtype, which wraps at 128 labels.
        """
        import numpy as np

        col = {label: j for j, label in enumerate(self.label_space)}
        out = np.zeros((len(self), len(self.label_space)), dtype=np.int64)
        for i, labels in enumerate(self.labels):
            for label in labels:
                out[i, col[label]] = 1
        return out
