"""The shared part of the readers of a publisher's release (MIMIC-III, PsyTAR, n2c2 2008): a folder in the layout
the publisher ships, read with no conversion code of the user's.

A release dataset reads `dataset.data_dir`, the folder as downloaded, and
applies its label map, its policies and its split rule, all written in its
config, so every user of one release gets the same documents, labels and
splits. `task=prepare` writes those splits as JSONL (the paper authors'
format: text and a label list); pointing `dataset.train` / `dataset.eval` at
them (the keys of the `files` loader, which this class extends) reads the
prepared files instead of the release. Messages name the file, the row and
the key to set, never a value read from a record.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Iterable, Mapping, Sequence

from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError, DataError
from synbench.data.common import SourceSplits
from synbench.data.files import FileDataset
from synbench.data.records import loader_rows_to_corpus

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Document:
    """One document of a release as its reader found it: where (for messages), the text, the labels its config's
    map gave it (possibly none), an id unique in the release and the group it shares with others (a patient)."""

    where: str
    text: str
    labels: Sequence[str]
    doc_id: str
    group: str = ""


@dataclass(kw_only=True)
class ReleaseDataset(FileDataset):
    """A publisher's release in `data_dir` (or, with `train` set, the JSONL files `task=prepare` wrote from it).

    `unlabelled_label` is the policy for a document the label map gives no
    label: null drops it (the count is logged), a name of the label space
    gives it that label.
    """

    data_dir: str | None = None  # the release folder, as the publisher ships it
    unlabelled_label: str | None = None  # null: a document with no label is dropped (counted in the log)

    # what the folder is called where the publisher ships it, for messages ("mimic-iii-clinical-database-1.4")
    release_folder: ClassVar[str] = "the release folder"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.data_dir is not None and self.train is not None:
            raise ConfigError(
                f"dataset '{self.name}' sets both data_dir (the release) and train (prepared files); keep one: "
                "dataset.train=null to read the release, or dataset.data_dir=null to read the prepared files"
            )
        if self.unlabelled_label is not None and self.label_space and self.unlabelled_label not in self.label_space:
            raise ConfigError(
                f"dataset.unlabelled_label={self.unlabelled_label!r} is not in dataset.label_space; add it there, "
                "or set dataset.unlabelled_label=null to drop the documents without a label"
            )

    @abstractmethod
    def release_files(self) -> Mapping[str, Sequence[str]]:
        """The files the reader opens, by the config key that names them (relative to `data_dir`)."""

    @abstractmethod
    def read_release(self, folder: Path) -> SourceSplits:
        """The corpora (and groups) of the release in `folder`, every file of `release_files` present."""

    def _read(self) -> SourceSplits:
        self.check_source()
        if self.train is not None:
            return super()._read()
        assert self.data_dir is not None  # check_source refuses an unset data_dir
        return self.read_release(Path(self.data_dir).expanduser())

    def check_source(self) -> None:
        """The release folder is set and holds every file the reader opens (or the prepared files exist)."""
        if self.train is not None:
            super().check_source()
            return
        if self.data_dir is None:
            raise ConfigError(
                f"dataset '{self.name}' needs its release: set dataset.data_dir=<the {self.release_folder} folder> "
                f"(or dataset.train=<the train.jsonl task=prepare wrote>).{self.where_to_get()}"
            )
        folder = Path(self.data_dir).expanduser()
        if not folder.is_dir():
            raise DataError(
                f"dataset '{self.name}': dataset.data_dir '{folder}' is not a folder; set it to the "
                f"{self.release_folder} folder.{self.where_to_get()}"
            )
        for key, names in self.release_files().items():
            for name in names:
                if not (folder / name).is_file():
                    raise DataError(
                        f"dataset '{self.name}': '{folder / name}' does not exist; set dataset.data_dir to the "
                        f"{self.release_folder} folder that holds it, or dataset.{key} to its name there"
                    )

    def release_corpus(self, documents: Iterable[Document], source: str, split: str) -> tuple[Corpus, list[str]]:
        """The corpus `<name>-<split>` of `documents` read from `source` (each document's labels in label-space
        order, the unlabelled policy applied), validated as every loader's records are, and each document's group,
        in the corpus's order."""
        rank = {label: i for i, label in enumerate(self.label_space or ())}
        rows, groups, dropped = [], [], 0
        for doc in documents:
            labels = sorted(dict.fromkeys(doc.labels), key=lambda label: rank.get(label, len(rank)))
            if not labels and self.unlabelled_label is None:
                dropped += 1
                continue
            rows.append((doc.where, {"id": doc.doc_id, "text": doc.text, "label": labels or [self.unlabelled_label]}))
            groups.append(doc.group)
        if dropped and not rows:
            raise DataError(
                f"{source}: none of its {dropped} {split} documents has a label by dataset '{self.name}''s label "
                "rules, and dataset.unlabelled_label=null drops such documents; check that dataset.data_dir holds "
                "the release and the label keys of the config (--cfg job prints them), or set "
                "dataset.unlabelled_label to keep them"
            )
        if dropped:
            log.info(
                "dataset '%s': dropped %d %s documents with no label (dataset.unlabelled_label=null)",
                self.name,
                dropped,
                split,
            )
        corpus = loader_rows_to_corpus(
            rows,
            source=source,
            name=self.name,
            split=split,
            multi_label=self.multi_label,
            label_space=self.label_space,
            label_map=self.label_map,
            max_chars=self.max_chars,
            html_entities=False,
        )
        return corpus, groups


def check_columns(present: Iterable[object], wanted: Iterable[str], source: str, key: str) -> None:
    """Refuse `source` when its header lacks a column of `wanted` (the release's own names), naming the columns and
    `key`, the config key of the file."""
    names = {str(p).strip() for p in present}
    missing = [column for column in wanted if column not in names]
    if missing:
        raise DataError(
            f"{source} has no column {', '.join(map(repr, missing))}; check that dataset.{key} names the release's "
            "file (as the publisher ships it)"
        )
