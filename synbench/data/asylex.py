"""`asylex`: AsyLex's case outcomes read from the files its authors publish (the hub repository
`clairebarale/AsyLex`), as they lie: a folder of the repository's files, or the hub id fetched at its pinned
revision with `huggingface_hub.snapshot_download`, which bypasses the card's `configs:` (whose default config,
`raw_sentences`, is not this task, and whose pinned commit still holds a loading script `datasets` refuses).

The outcome files (`outcome_train_test/train_dataset_silver.csv`, the rule-labelled train split, and
`outcome_train_test/test_dataset_gold.csv`, the human-labelled test split; `;`-separated, `decisionID;
decision_outcome`) hold no text. The text of a decision is its determination sentences, in
`determination_label_extracted_sentences.csv` (`decisionID;extracted_sentences_determination`, the second column a
Python list literal of sentence strings, one row per sentence of the decision in which the authors' entity model
found a determination span, so a decision may have several rows). Our rules, each stated in docs/datasets.md:

- a decision's text is its sentences joined by a space, its rows in file order; a row repeating an earlier row
  of the same decision exactly is read once (counted);
- a decision with no sentences (no row, or only empty lists) is dropped (counted per split);
- a decision of the gold test set that is also in the silver train set leaves train (counted), so no eval
  document is a training document;
- a `decisionID` or outcome code written as a whole number with ".0" (a pandas float column) is that number;
- a sentences cell is parsed only for a decision of the outcome files; one that is not a list of strings is
  refused naming the file and line.
"""

from __future__ import annotations

import ast
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from synbench.core.errors import ConfigError, DataError
from synbench.data.common import SourceSplits
from synbench.data.files import delimited_rows
from synbench.data.hub import snapshot, snapshot_revision
from synbench.data.raw import Document, ReleaseDataset, check_columns
from synbench.data.records import Row

log = logging.getLogger(__name__)

ID_COLUMN = "decisionID"
OUTCOME_COLUMN = "decision_outcome"
SENTENCES_COLUMN = "extracted_sentences_determination"


@dataclass(frozen=True)
class Outcome:
    """One decision of an outcome file: the line it is on and its outcome code as written."""

    where: str
    code: str


def _whole(value: str) -> str:
    """A cell's value stripped, a whole number written as a float ("1234.0", as pandas writes a float column)
    as that number ("1234"), so the same decision or code reads the same in every file."""
    text = value.strip()
    head, dot, tail = text.partition(".")
    return head if dot and head.isdigit() and set(tail) == {"0"} else text


def _sentences(cell: str, at: str) -> list[str]:
    """The non-empty sentences of a cell written as a Python list literal of strings (`['...', '...']`); an empty
    cell has none; anything else is refused naming `at` (the file and line), never quoting the cell."""
    if not cell.strip():
        return []
    try:
        value = ast.literal_eval(cell)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = None
    if not isinstance(value, list) or not all(isinstance(sentence, str) for sentence in value):
        raise DataError(
            f"{at}: column {SENTENCES_COLUMN!r} is not a list of sentences written as a Python list literal "
            "(['...', '...']), as AsyLex writes it; fix the line, or check that dataset.sentences_file names "
            "AsyLex's determination sentences file"
        )
    return [sentence.strip() for sentence in value if sentence.strip()]


@dataclass(kw_only=True)
class AsyLexDataset(ReleaseDataset):
    """AsyLex's outcome task: gold test decisions as eval, silver ones as train (see the module docstring).

    `data_dir` is a folder holding the repository's files as they lie (a
    `snapshot_download` folder, or a copy of one); without it, `path` (the hub
    id) is fetched at `revision` through the hub cache, which also works
    offline once cached. The outcome codes are labels through `label_map`.
    """

    name: str = "asylax"
    path: str | None = None  # the hub repository, fetched at `revision` when data_dir is null
    revision: str | None = None  # the commit read from the hub (null: whatever main holds today)
    train_file: str = "outcome_train_test/train_dataset_silver.csv"  # the silver (rule-labelled) decisions
    test_file: str = "outcome_train_test/test_dataset_gold.csv"  # the gold (human-labelled) decisions: eval
    sentences_file: str = "determination_label_extracted_sentences.csv"  # each decision's determination sentences
    delimiter: str = ";"  # the CSV delimiter of all three files

    release_folder = "AsyLex repository snapshot"

    def release_files(self) -> dict[str, list[str]]:
        return {"train_file": [self.train_file], "test_file": [self.test_file], "sentences_file": [self.sentences_file]}

    def check_source(self) -> None:
        """A release folder, prepared files, or a hub id (fetched, and so only checked, when the job loads)."""
        if self.train is None and self.data_dir is None:
            if not self.path:
                raise ConfigError(
                    f"dataset '{self.name}' needs its release: set dataset.data_dir=<the {self.release_folder} "
                    f"folder> or dataset.path=<its hub id>.{self.where_to_get()}"
                )
            return
        super().check_source()

    def _read(self) -> SourceSplits:
        if self.train is not None or self.data_dir is not None:
            return super()._read()
        self.check_source()
        assert self.path is not None  # check_source refuses a release with neither data_dir nor path
        files = [name for names in self.release_files().values() for name in names]
        return self.read_release(snapshot(self.path, self.revision, files, self.name))

    def read_release(self, folder: Path) -> SourceSplits:
        """The gold test decisions as eval and the silver ones not among them as train, each with its sentences;
        the commit is the snapshot folder's (None for a folder of another layout)."""
        train = self._outcomes(folder / self.train_file, "train_file")
        test = self._outcomes(folder / self.test_file, "test_file")
        overlap = [decision for decision in train if decision in test]
        if overlap:
            log.info(
                "dataset '%s': removed %d silver training decisions that are also gold test decisions (eval)",
                self.name,
                len(overlap),
            )
        train = {decision: outcome for decision, outcome in train.items() if decision not in test}
        texts = self._texts(folder / self.sentences_file, {*train, *test})
        corpora = {
            split: self.release_corpus(
                self._documents(outcomes, texts, split), f"{folder / file} (text: {self.sentences_file})", split
            )[0]
            for split, file, outcomes in (("train", self.train_file, train), ("eval", self.test_file, test))
        }
        return SourceSplits(corpora["train"], corpora["eval"], source_revision=snapshot_revision(folder))

    def _rows(self, path: Path, columns: list[str], key: str) -> Iterator[Row]:
        """The rows of a `delimiter`-separated file of the release (`key` names it), its header checked for
        `columns`; a row of another field count is refused naming its line."""
        return delimited_rows(
            path, self.delimiter, key=key, check_header=lambda header: check_columns(header, columns, str(path), key)
        )

    def _outcomes(self, path: Path, key: str) -> dict[str, Outcome]:
        """Decision -> its outcome, in file order; a decision listed twice, or a line without a decision, is
        refused naming the lines."""
        outcomes: dict[str, Outcome] = {}
        for where, row in self._rows(path, [ID_COLUMN, OUTCOME_COLUMN], key):
            decision = _whole(row[ID_COLUMN])
            if not decision:
                raise DataError(
                    f"{path} {where}: column {ID_COLUMN!r} is empty; give the line its decision, or remove it"
                )
            if decision in outcomes:
                raise DataError(
                    f"{path} {where}: the decision in column {ID_COLUMN!r} is already listed at "
                    f"{outcomes[decision].where}; keep one line per decision in dataset.{key}"
                )
            outcomes[decision] = Outcome(where, _whole(row[OUTCOME_COLUMN]))
        return outcomes

    def _texts(self, path: Path, wanted: set[str]) -> dict[str, str]:
        """Each decision of `wanted` that has sentences -> its sentences joined by a space, its rows in file order
        (a row repeating an earlier row of the decision exactly is read once)."""
        sentences: dict[str, list[str]] = {}
        cells: dict[str, set[str]] = {}
        repeated = 0
        for where, row in self._rows(path, [ID_COLUMN, SENTENCES_COLUMN], "sentences_file"):
            decision = _whole(row[ID_COLUMN])
            if decision not in wanted:
                continue
            cell = row[SENTENCES_COLUMN]
            if cell in cells.setdefault(decision, set()):
                repeated += 1
                continue
            cells[decision].add(cell)
            sentences.setdefault(decision, []).extend(_sentences(cell, f"{path} {where}"))
        if repeated:
            log.info("dataset '%s': read %d repeated sentence rows of a decision once", self.name, repeated)
        return {decision: " ".join(found) for decision, found in sentences.items() if found}

    def _documents(self, outcomes: dict[str, Outcome], texts: dict[str, str], split: str) -> Iterator[Document]:
        """The decisions of `outcomes` that have sentences, as documents labelled with their outcome code; those
        without are dropped, counted in the log."""
        missing = 0
        for decision, outcome in outcomes.items():
            if decision not in texts:
                missing += 1
                continue
            labels = [outcome.code] if outcome.code else []  # no code: the unlabelled policy (release_corpus)
            yield Document(where=outcome.where, text=texts[decision], labels=labels, doc_id=decision)
        if missing:
            log.info("dataset '%s': dropped %d %s decisions without determination sentences", self.name, missing, split)
