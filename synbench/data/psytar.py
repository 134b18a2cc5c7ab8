"""`psytar`: PsyTAR's sentence labels read from the workbook its publisher ships (`PsyTAR_dataset.xlsx`).

The sheet `Sentence_Labeling` holds one sentence of a patient's drug review
per row (`drug_id` names the review, `sentence_index` the sentence in it)
and one indicator column per category, marked with "!" or "*" (or 1). The
config's `label_columns` maps each indicator column to its label and
`marks` lists the characters that mark a cell; an empty (or 0) cell is
unmarked, anything else is refused naming the sheet, row and column. A
sentence with no mark follows `unlabelled_label`. PsyTAR has no official
split: `eval_fraction` is held out with `split_seed`, whole reviews at a time,
so no review has sentences on both sides.
"""

from __future__ import annotations

import logging
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from synbench.core.errors import ConfigError, DataError
from synbench.data.common import SourceSplits
from synbench.data.raw import Document, ReleaseDataset, check_columns

log = logging.getLogger(__name__)

REVIEW_COLUMN = "drug_id"
SENTENCE_INDEX_COLUMN = "sentence_index"
TEXT_COLUMN = "sentences"


@dataclass(kw_only=True)
class PsyTARDataset(ReleaseDataset):
    """PsyTAR sentences labelled by their marked indicator columns (see the module docstring)."""

    name: str = "psytar"
    workbook: str = "PsyTAR_dataset.xlsx"  # in data_dir
    sheet: str = "Sentence_Labeling"
    label_columns: dict[str, str] = field(default_factory=dict)  # indicator column -> its label (the config's map)
    marks: list[str] = field(default_factory=list)  # the characters that mark a cell ("!", "*", "1")

    release_folder = "PsyTAR download"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.label_columns or not self.marks or any(len(str(mark)) != 1 for mark in self.marks):
            raise ConfigError(
                f"dataset '{self.name}' needs dataset.label_columns (indicator column -> label) and dataset.marks "
                "(the single characters that mark a cell, e.g. ['!', '*', '1']); conf/dataset/psytar.yaml sets both"
            )
        if self.label_space is not None and set(self.label_columns.values()) - set(self.label_space):
            raise ConfigError(
                f"dataset '{self.name}': a label of dataset.label_columns is not in dataset.label_space; list "
                f"{sorted(set(self.label_columns.values()) - set(self.label_space))} there"
            )

    def release_files(self) -> dict[str, list[str]]:
        return {"workbook": [self.workbook]}

    def read_release(self, folder: Path) -> SourceSplits:
        path = folder / self.workbook
        source = f"{path} sheet {self.sheet!r}"
        train, groups = self.release_corpus(self._sentences(path, source), source, "train")
        return SourceSplits(train, None, groups)

    def _sentences(self, path: Path, source: str) -> Iterator[Document]:
        """The labelled sentences of the sheet, in its row order; rows without a sentence are skipped (counted)."""
        rows = _sheet_rows(path, self.sheet)
        header = [str(cell).strip() if cell is not None else "" for cell in next(rows, ())]
        check_columns(header, [REVIEW_COLUMN, SENTENCE_INDEX_COLUMN, TEXT_COLUMN, *self.label_columns], source, "sheet")
        at = {name: header.index(name) for name in header if name}
        blank = 0
        for number, row in enumerate(rows, 2):
            cells = list(row) + [None] * (len(header) - len(row))
            text = cells[at[TEXT_COLUMN]]
            if text is None or not str(text).strip():
                blank += 1
                continue
            where = f"row {number}"
            review = _cell_text(cells[at[REVIEW_COLUMN]])
            labels = [
                label
                for column, label in self.label_columns.items()
                if self._marked(cells[at[column]], f"{source} {where} column {column!r}")
            ]
            yield Document(
                where=where,
                text=str(text),
                labels=labels,
                doc_id=f"{review}-{_cell_text(cells[at[SENTENCE_INDEX_COLUMN]])}",
                group=review,
            )
        if blank:
            log.info("dataset '%s': skipped %d rows of sheet %r without a sentence", self.name, blank, self.sheet)

    def _marked(self, cell: Any, at: str) -> bool:
        """Whether an indicator cell marks its label: empty or 0 is unmarked, made of `marks` is marked."""
        text = "".join(_cell_text(cell).split())
        if text in ("", "0"):
            return False
        if set(text) <= {str(mark) for mark in self.marks}:
            return True
        raise DataError(
            f"{at}: the cell is neither empty (or 0) nor made of the marks in dataset.marks ({self.marks}); add its "
            "mark to dataset.marks, or fix the cell"
        )


def _cell_text(cell: Any) -> str:
    """A cell's value as text: a whole number without its ".0" (openpyxl reads 1 as 1 or 1.0), None as ""."""
    if cell is None:
        return ""
    if isinstance(cell, float) and cell.is_integer():
        cell = int(cell)
    return str(cell).strip()


def _sheet_rows(path: Path, sheet: str) -> Iterator[tuple[Any, ...]]:
    """The values of each row of `sheet` in the workbook `path`; an unreadable workbook or a missing sheet is
    refused naming the key to set."""
    import openpyxl

    try:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
        raise DataError(
            f"{path} is not a readable .xlsx workbook ({type(exc).__name__}); check that dataset.workbook names "
            "PsyTAR's workbook"
        ) from None
    try:
        if sheet not in workbook.sheetnames:
            raise DataError(f"{path} has no sheet {sheet!r}; set dataset.sheet to the sentence-labelling sheet")
        yield from workbook[sheet].iter_rows(values_only=True)
    finally:
        workbook.close()
