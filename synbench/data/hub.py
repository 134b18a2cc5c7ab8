"""`huggingface`: a dataset from a `datasets` folder on disk, or by hub id.

Jobs must run offline (compute nodes often have no internet), so the
intended use is a folder written by `save_to_disk` on a machine that has
internet; the hub id is the fallback, and when it fails the error says how to
make that folder. Integer labels are mapped to names through the dataset's
ClassLabel features, so label spaces read as words, not indices.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synbench.corpus import Corpus
from synbench.data.common import FieldDataset
from synbench.data.records import listing
from synbench.errors import ConfigError, DataError


def _class_names(feature: Any) -> list[str] | None:
    """Names of a ClassLabel feature, or of the ClassLabel inside a list feature; None otherwise."""
    for candidate in (feature, getattr(feature, "feature", None)):
        names = getattr(candidate, "names", None)
        if names:
            return list(names)
    return None


@dataclass(kw_only=True)
class HuggingFaceDataset(FieldDataset):
    """`path`: a `save_to_disk` folder if it exists here, else a hub id for `load_dataset(path, subset)`.

    `eval_split: null` (or a folder holding a single split) holds out
    `eval_fraction` of train. `label_names` names integer labels when the
    features carry no ClassLabel (e.g. a CSV-backed hub dataset).
    """

    path: str | None = None
    subset: str | None = None
    train_split: str = "train"
    eval_split: str | None = "test"
    label_names: list[str] | None = None

    def _read(self) -> tuple[Corpus, Corpus | None]:
        import datasets

        data = self._open()
        if isinstance(data, datasets.Dataset):
            return self._split_corpus(data, "train", "train"), None
        train = self._split_corpus(self._split(data, self.train_split, "train_split"), self.train_split, "train")
        if self.eval_split is None:
            return train, None
        return train, self._split_corpus(self._split(data, self.eval_split, "eval_split"), self.eval_split, "eval")

    def _open(self) -> Any:
        import datasets

        if not self.path:
            raise ConfigError(
                f"dataset '{self.name}' needs dataset.path=<a save_to_disk folder or a hub id>.{self.where_to_get()}"
            )
        local = Path(self.path).expanduser()
        if local.exists():
            try:
                return datasets.load_from_disk(str(local))
            except (FileNotFoundError, ValueError) as exc:
                raise DataError(
                    f"'{local}' is not a folder written by datasets' save_to_disk ({type(exc).__name__}); "
                    f"set dataset.path to such a folder"
                ) from None
        if self.path.startswith(("/", ".", "~")):
            raise DataError(
                f"dataset '{self.name}': folder '{self.path}' does not exist; set dataset.path=/the/saved/folder"
            )
        subset = f", {self.subset!r}" if self.subset else ""
        try:
            return datasets.load_dataset(self.path, self.subset)
        except Exception as exc:  # the hub client raises many types (connection, auth, not found)
            raise DataError(
                f"could not load {self.path!r}{subset} from the Hugging Face hub ({type(exc).__name__}); "
                f"on a machine with internet run datasets.load_dataset({self.path!r}{subset})"
                f".save_to_disk('/some/folder'), copy the folder here and pass dataset.path=/some/folder"
            ) from None

    def _split(self, data: Any, split: str, key: str) -> Any:
        if split not in data:
            extra = " or null to hold out dataset.eval_fraction of train" if key == "eval_split" else ""
            raise DataError(
                f"dataset '{self.name}' ({self.path}) has no split {split!r}; its splits are "
                f"{listing(list(data))}; set dataset.{key}=<one of them>{extra}"
            )
        return data[split]

    def _split_corpus(self, data: Any, split: str, role: str) -> Corpus:
        names = _class_names(data.features.get(self.label_field)) or self.label_names
        rows = ((f"row {i}", record) for i, record in enumerate(data))
        return self._corpus(rows, f"huggingface dataset '{self.path}' split '{split}'", role, label_names=names)
