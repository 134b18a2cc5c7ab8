"""`huggingface`: a dataset from a `datasets` folder on disk, or by hub id.

Jobs must run offline (compute nodes often have no internet), so the
intended use is a folder written by `save_to_disk` on a machine that has
internet; the hub id is the fallback, and when it fails the error says how to
make that folder. Integer labels are mapped to names through the dataset's
ClassLabel features, so label spaces read as words, not indices. A hub id is
read at the `revision` its config pins (a commit of the dataset's repository),
so every user of the config gets the same data, whatever the repository
holds today. The commit a hub load actually read is kept (`source_revision`,
into the manifest and results.json), so a job read at a branch can be pinned
afterwards; a folder on disk has none.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError, DataError
from synbench.core.revisions import COMMIT_SHA, names_folder, pinned
from synbench.data.common import FieldDataset, SourceSplits
from synbench.data.records import listing


def snapshot_revision(folder: Path) -> str | None:
    """The commit of a `huggingface_hub` snapshot folder (`.../snapshots/<sha>`, the cache's layout); None for any
    other folder, whose origin nothing on disk records."""
    return folder.name if folder.parent.name == "snapshots" and pinned(folder.name) else None


def loaded_revision(data: Any) -> str | None:
    """The commit a `datasets` hub load read, without asking the hub again: `datasets` caches a hub load under
    `.../<commit sha>/` (its builder's hash), online or offline; None when the cached files name no one commit."""
    groups = data.cache_files.values() if isinstance(data.cache_files, dict) else [data.cache_files]
    found = {
        part
        for files in groups
        for file in files
        for part in Path(file["filename"]).parts
        if COMMIT_SHA.fullmatch(part)
    }
    return found.pop() if len(found) == 1 else None


def snapshot(repo: str, revision: str | None, files: Sequence[str], dataset: str) -> Path:
    """The folder of `files` of the hub dataset repository `repo` at `revision`, fetched (or found in the cache)
    by `huggingface_hub.snapshot_download`: the repository's files as they lie, with no loader of the card's."""
    from huggingface_hub import snapshot_download

    try:
        folder = snapshot_download(repo_id=repo, repo_type="dataset", revision=revision, allow_patterns=list(files))
    except Exception as exc:  # the hub client raises many types (connection, auth, not found, offline)
        raise DataError(
            f"dataset '{dataset}': could not fetch {list(files)} of {repo!r} at revision {revision!r} from the Hugging "
            f"Face hub ({type(exc).__name__}); on a machine with internet run huggingface_hub.snapshot_download("
            f"{repo!r}, repo_type='dataset', revision={revision!r}, allow_patterns={list(files)!r}, "
            "local_dir='/some/folder'), copy the folder here and pass dataset.data_dir=/some/folder"
        ) from None
    return Path(folder)


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
    features carry no ClassLabel (e.g. a CSV-backed hub dataset). From the
    hub, `revision` pins the commit read; `data_files` (split -> file in the
    repository) and `delimiter` read a repository of plain CSV files, as
    published, when its card declares no loader for them.
    """

    path: str | None = None
    subset: str | None = None
    revision: str | None = None  # the hub commit (or tag) read; null: whatever the repository holds today
    data_files: dict[str, str] | None = None  # null: the repository's own splits
    delimiter: str | None = None  # the CSV delimiter of data_files (null: the csv reader's ",")
    train_split: str = "train"
    eval_split: str | None = "test"
    label_names: list[str] | None = None
    # true (with label_space null): the label space is the class names the release's label feature declares,
    # published metadata rather than labels read from records (LexGLUE EURLEX's 100 EuroVoc concepts)
    label_space_from_features: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.label_space_from_features and self.label_space is not None:
            raise ConfigError(
                f"dataset '{self.name}' sets both label_space and label_space_from_features=true; keep one (the "
                "configured list, or the class names the release declares)"
            )

    def _read(self) -> SourceSplits:
        import datasets

        data, revision = self._open()
        train_data = data if isinstance(data, datasets.Dataset) else self._split(data, self.train_split, "train_split")
        declared = self._declared_space(train_data)
        reader = replace(self, label_space=list(declared), label_space_from_features=False) if declared else self
        train_split = "train" if isinstance(data, datasets.Dataset) else self.train_split
        train = reader._split_corpus(train_data, train_split, "train")
        if isinstance(data, datasets.Dataset) or self.eval_split is None:
            return SourceSplits(train, label_space=declared, source_revision=revision)
        eval_data = self._split(data, self.eval_split, "eval_split")
        evaluation = reader._split_corpus(eval_data, self.eval_split, "eval")
        return SourceSplits(train, evaluation, label_space=declared, source_revision=revision)

    def _declared_space(self, data: Any) -> tuple[str, ...] | None:
        """With `label_space_from_features`, the class names of the label feature (refused when it declares none)."""
        if not self.label_space_from_features:
            return None
        names = _class_names(data.features.get(self.label_field))
        if not names:
            raise DataError(
                f"dataset '{self.name}': field {self.label_field!r} of {self.path} declares no class names; set "
                "dataset.label_space to the task's labels and dataset.label_space_from_features=false"
            )
        return tuple(names)

    def check_source(self) -> None:
        """A path is set, and one that names a local folder exists (a hub id is only tried when the job loads)."""
        if not self.path:
            raise ConfigError(
                f"dataset '{self.name}' needs dataset.path=<a save_to_disk folder or a hub id>.{self.where_to_get()}"
            )
        if names_folder(self.path) and not Path(self.path).expanduser().exists():
            raise DataError(
                f"dataset '{self.name}': folder '{self.path}' does not exist; set dataset.path=/the/saved/folder"
            )

    def _open(self) -> tuple[Any, str | None]:
        """The data, and the hub commit it was read at (None for a `save_to_disk` folder)."""
        import datasets

        self.check_source()
        assert self.path is not None  # check_source refuses an unset path
        local = Path(self.path).expanduser()
        if local.exists():
            try:
                return datasets.load_from_disk(str(local)), None
            except (FileNotFoundError, ValueError) as exc:
                raise DataError(
                    f"'{local}' is not a folder written by datasets' save_to_disk ({type(exc).__name__}); "
                    f"set dataset.path to such a folder"
                ) from None
        given = {"revision": self.revision, "data_files": self.data_files, "delimiter": self.delimiter}
        options = {key: value for key, value in given.items() if value is not None}
        try:
            data = datasets.load_dataset(self.path, self.subset, **options)
        except Exception as exc:  # the hub client raises many types (connection, auth, not found)
            arguments = [repr(self.path), *([repr(self.subset)] if self.subset else [])]
            arguments += [f"{key}={value!r}" for key, value in options.items()]
            raise DataError(
                f"could not load {self.path!r} from the Hugging Face hub ({type(exc).__name__}); "
                f"on a machine with internet run datasets.load_dataset({', '.join(arguments)})"
                f".save_to_disk('/some/folder'), copy the folder here and pass dataset.path=/some/folder"
            ) from None
        return data, loaded_revision(data)

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
