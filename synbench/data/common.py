"""Shared base of the built-in dataset loaders: the common config keys and the load pipeline.

Each loader only says how to read its train (and optional eval) records;
label-space inference and splitting happen here the same way for all of
them. The dataclass fields are the config keys, since the registry passes a
config node's keys to the constructor.

The splits belong to the dataset, not to the job: an official eval split
where the release has one, else a hold-out drawn with the dataset's
`split_seed` (whole groups where documents share a patient or a review), so
every job of a sweep, whatever its `seed`, trains and scores on the same
documents, and two users of one release get the same splits.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

from synbench.core.base import DatasetLoader, Splits
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.data.records import MAX_CHARS, Row, infer_label_space, records_to_corpus
from synbench.data.split import make_splits

# how a generator trains on a document longer than its sequence length (`long_documents`; DP-Gen reads it)
LONG_DOCUMENTS = ("truncate", "head_tail", "chunk")


@dataclass(frozen=True)
class SourceSplits:
    """What a reader read: the train corpus, the release's own eval split (None: held out of train), for each
    train document its group (None: none), which a held-out split keeps on one side, the label space the
    release declares when the config leaves it to the release (public metadata, not inferred from records), and
    the hub commit the read resolved (None: a local release, or unknown), which `Splits.source_revision` carries
    to the manifest and results.json."""

    train: Corpus
    eval: Corpus | None = None
    groups: Sequence[str] | None = None
    label_space: tuple[str, ...] | None = None
    source_revision: str | None = None


@dataclass(kw_only=True)
class BaseDataset(DatasetLoader):
    """Keys every dataset has.

    `label_space` is public (null: inferred from the data, with a warning,
    and flagged `label_space_inferred: true` in results; a space that looks
    like document text is refused unless `allow_inferred_label_space`).
    `max_length` is the token sequence length generators use for this
    dataset (the paper's DP-Gen setting); loading does not truncate. `access`
    (public / DUA / credentialed) and `source` say where to get the data and
    appear in errors when it is missing. `max_chars` is the longest document
    text accepted (a longer one is refused, naming its file and line, before a
    tokenizer sees it). `long_documents` says how a
    generator trains on documents longer than its sequence length (truncate |
    head_tail | chunk, with at most `max_chunks` chunks; see
    synbench/generators/dpgen/data.py): part of the dataset's config because
    it follows the corpus (the paper truncates its long corpora).
    `control_code` is the public template of the label prefix a label-conditioned
    generator trains and prompts with (`{labels}`: the labels, tab-joined;
    null: the generator's own), read by DP-Gen through its config: it words
    what the labels are ("Condition: Depression"), which follows the dataset.
    `split_seed` draws the held-out eval split and the `max_train` /
    `max_eval` subsamples: part of the dataset, so the job's `seed` never
    moves them.
    """

    name: str = "dataset"
    domain: str | None = None  # medical, financial, legal, ...: the word the post-hoc filter's prompt asks about
    label_space: list[str] | None = None  # null = inferred from the data (and then treated as public)
    eval_fraction: float = 0.2  # held out of train when there is no eval split
    split_seed: int = 0  # the held-out split and the subsamples (never the job's seed: one eval set per dataset)
    min_eval_per_class: int = 0  # eval documents each label gets at least, moved from train (synbench.data.split)
    max_train: int | None = None
    max_eval: int | None = None
    max_length: int | None = None
    max_chars: int = MAX_CHARS  # the longest document text accepted; a longer record is refused (file and line)
    long_documents: str = "truncate"  # LONG_DOCUMENTS: truncate (head) | head_tail | chunk (max_chunks, one unit)
    max_chunks: int = 4
    control_code: str | None = None
    access: str = "public"
    source: str = ""
    # true: release an inferred space even when it looks like text (> N/10 labels, or one > 100 chars)
    allow_inferred_label_space: bool = False

    def __post_init__(self) -> None:
        """The checks a type cannot express: a label space of distinct names, a sequence length of at least 1."""
        if self.label_space is not None:
            seen = [label for i, label in enumerate(self.label_space) if label in self.label_space[:i]]
            if seen:
                raise ConfigError(
                    f"dataset.label_space names {', '.join(map(repr, dict.fromkeys(seen)))} more than once; "
                    "list each label once"
                )
            if not self.label_space:
                raise ConfigError("dataset.label_space is empty; list the labels, or null to infer them from the data")
        if self.max_length is not None and self.max_length < 1:
            raise ConfigError(f"dataset.max_length={self.max_length} must be at least 1 (tokens per sequence), or null")
        if self.max_chunks < 1:
            raise ConfigError(f"dataset.max_chunks={self.max_chunks} must be at least 1")
        if self.long_documents not in LONG_DOCUMENTS:
            raise ConfigError(
                f"dataset.long_documents={self.long_documents!r} is not one of {', '.join(LONG_DOCUMENTS)}; pick one "
                "(docs/datasets.md)"
            )
        if not 0 < self.eval_fraction < 1:  # read only without an eval split, checked with every dataset
            raise ConfigError(
                f"dataset.eval_fraction={self.eval_fraction} must be between 0 and 1 (the share of train held out "
                "when the dataset has no eval split); set for example dataset.eval_fraction=0.2"
            )

    def load(self, seed: int) -> Splits:
        """The dataset's splits; the job's `seed` does not move them (they are drawn with `split_seed`)."""
        read = self._read()
        train, eval = read.train, read.eval
        inferred = self.label_space is None and read.label_space is None
        if inferred:
            train, eval = infer_label_space(
                self.name, train, eval, self.label_origin(), self.allow_inferred_label_space
            )
        splits = make_splits(
            train,
            eval,
            name=self.name,
            seed=self.split_seed,
            eval_fraction=self.eval_fraction,
            max_train=self.max_train,
            max_eval=self.max_eval,
            groups=read.groups,
            min_eval_per_class=self.min_eval_per_class,
        )
        return replace(splits, label_space_inferred=inferred, source_revision=read.source_revision)

    @abstractmethod
    def _read(self) -> SourceSplits:
        """The train corpus, the eval corpus (None when eval is to be held out of train) and train's groups."""

    def label_origin(self) -> str:
        """Where the labels are read from, for messages ("field 'label'")."""
        return "the label field"

    def where_to_get(self) -> str:
        """Sentences appended to "data not found" errors saying how to obtain the data ("" if unknown)."""
        return f" Access: {self.access}. Where to get it: {self.source}" if self.source else ""


@dataclass(kw_only=True)
class FieldDataset(BaseDataset):
    """A dataset whose records name their fields: which holds the text, the label(s), the id."""

    text_field: str = "text"
    label_field: str = "label"
    id_field: str | None = None
    multi_label: bool = False
    label_sep: str | None = None
    # a label as the source writes it -> its name in label_space (BigBIO's "none" -> "NULL", AsyLex's 0 -> reject);
    # a label not listed is kept as written
    label_map: dict[str, str] = field(default_factory=dict)
    # the label a record without any gets (HoC's hub conversion writes an empty list where the source said NULL);
    # null refuses such a record
    unlabelled_label: str | None = None
    # true: label_field holds a mapping of class -> score (LC37FND's sentiment probabilities) and the label is the
    # class with the largest score, ties going to the first in label_space; label_map renames the classes
    label_from_scores: bool = False

    def __post_init__(self) -> None:
        """Refuse a score rule on a multi-label dataset: it gives each record its one top class."""
        super().__post_init__()
        if self.label_from_scores and self.multi_label:
            raise ConfigError(
                f"dataset '{self.name}' sets label_from_scores=true (one label: the class with the largest score) "
                "and multi_label=true; set dataset.multi_label=false, or label_from_scores=false for a field that "
                "holds the labels themselves"
            )

    def label_origin(self) -> str:
        return f"field {self.label_field!r}"

    def _corpus(
        self,
        rows: Iterable[Row],
        source: str,
        split: str,
        *,
        label_sep: str | None = None,
        label_names: Sequence[str] | None = None,
    ) -> Corpus:
        """Validate `rows` with this dataset's field mapping; `label_sep` defaults to the configured one."""
        return records_to_corpus(
            rows,
            source=source,
            name=self.name,
            split=split,
            text_field=self.text_field,
            label_field=self.label_field,
            id_field=self.id_field,
            multi_label=self.multi_label,
            label_space=self.label_space,
            label_sep=label_sep or self.label_sep,
            label_names=label_names,
            label_map=self.label_map,
            unlabelled_label=self.unlabelled_label,
            max_chars=self.max_chars,
            label_from_scores=self.label_from_scores,
        )
