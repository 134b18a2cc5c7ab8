"""`n2c2_2008`: the n2c2 (i2b2) 2008 Obesity Challenge read from its XML files, by the names they are released
under (DBMI Data Portal).

Records files hold `<root><docs><doc id="..."><text>...</text></doc>...`;
annotation files hold `<diseaseset><diseases source="textual|intuitive">
<disease name="Asthma"><doc id="..." judgment="Y|N|Q|U"/>...`. Judgements
are read file by file in the configured order, and a later judgement of the
same (document, disease, source) replaces an earlier one, as BigBIO's reader
and the other public readers do: the training addenda re-judge diseases of
the first file (the count replaced is logged). A disease is a label of a
document when its final `judgement_source` judgement is one of
`positive_judgements` (by default intuitive and Y, the framing public
multi-label readers use). The release's own split is kept: the training
files are train, the test files eval.

The test judgements ship in one of two layouts: one file holding both
sources (`obesity_standoff_annotations_test.xml`), or one file per source
(`obesity_standoff_annotations_test_textual.xml`, `..._intuitive.xml`).
With `test_annotations: null` the reader takes whichever the folder holds
(the one file when both are there; of the split layout, the configured
source's file).
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError, DataError
from synbench.data.common import SourceSplits
from synbench.data.raw import Document, ReleaseDataset

log = logging.getLogger(__name__)

JUDGEMENT_SOURCES = ("textual", "intuitive")
JUDGEMENTS = ("Y", "N", "Q", "U")  # present, absent, questionable, unmentioned
TEST_ANNOTATIONS = "obesity_standoff_annotations_test.xml"  # the test judgements of both sources in one file
TEST_ANNOTATIONS_OF_SOURCE = "obesity_standoff_annotations_test_{source}.xml"  # the layout with a file per source


@dataclass(kw_only=True)
class N2C2ObesityDataset(ReleaseDataset):
    """n2c2 2008 discharge summaries labelled with their comorbidities (see the module docstring)."""

    name: str = "n2c2_2008"
    train_records: list[str] = field(
        default_factory=lambda: ["obesity_patient_records_training.xml", "obesity_patient_records_training2.xml"]
    )
    train_annotations: list[str] = field(
        default_factory=lambda: [
            "obesity_standoff_annotations_training.xml",
            "obesity_standoff_annotations_training_addendum.xml",
            "obesity_standoff_annotations_training_addendum2.xml",
            "obesity_standoff_annotations_training_addendum3.xml",
        ]
    )
    test_records: list[str] = field(default_factory=lambda: ["obesity_patient_records_test.xml"])
    test_annotations: list[str] | None = None  # null: the layout data_dir holds (one file, or one per source)
    judgement_source: str = "intuitive"  # JUDGEMENT_SOURCES: whose judgements make the labels
    positive_judgements: list[str] = field(default_factory=lambda: ["Y"])  # the judgements that make a label

    release_folder = "n2c2 2008 obesity"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.judgement_source not in JUDGEMENT_SOURCES:
            raise ConfigError(
                f"dataset.judgement_source={self.judgement_source!r} is not one of {', '.join(JUDGEMENT_SOURCES)}"
            )
        if not self.positive_judgements or set(self.positive_judgements) - set(JUDGEMENTS):
            raise ConfigError(
                f"dataset.positive_judgements={self.positive_judgements} must list one or more of "
                f"{', '.join(JUDGEMENTS)}"
            )
        for key in ("train_records", "train_annotations", "test_records", "test_annotations"):
            if getattr(self, key) == []:
                raise ConfigError(
                    f"dataset.{key}=[] names no file; list the release's files"
                    + (" (or null: the layout data_dir holds)" if key == "test_annotations" else "")
                )

    def release_files(self) -> dict[str, list[str]]:
        """The files of fixed names; the test judgements' layout, when not configured, is found by `check_source`
        once the folder holds the others."""
        files = {
            "train_records": self.train_records,
            "train_annotations": self.train_annotations,
            "test_records": self.test_records,
        }
        return files if self.test_annotations is None else {**files, "test_annotations": self.test_annotations}

    def check_source(self) -> None:
        super().check_source()
        if self.train is None:
            self._test_annotations()

    def _test_annotations(self) -> list[str]:
        """The configured test judgement files, or (null) the layout `data_dir` holds: the one file of both sources,
        else the configured source's file of the split layout; a folder with neither is refused naming both."""
        if self.test_annotations is not None:
            return self.test_annotations
        assert self.data_dir is not None  # only a release folder is read (check_source refuses none)
        folder = Path(self.data_dir).expanduser()
        layouts = [TEST_ANNOTATIONS, TEST_ANNOTATIONS_OF_SOURCE.format(source=self.judgement_source)]
        for name in layouts:
            if (folder / name).is_file():
                return [name]
        raise DataError(
            f"dataset '{self.name}': '{folder}' holds neither {layouts[0]} nor {layouts[1]} (the test judgements, "
            f"dataset.judgement_source={self.judgement_source}); set dataset.data_dir to the {self.release_folder} "
            "folder that holds one, or dataset.test_annotations to the files there"
        )

    def read_release(self, folder: Path) -> SourceSplits:
        train = self._split(folder, self.train_records, self.train_annotations, "train", "train_annotations")
        test = self._split(folder, self.test_records, self._test_annotations(), "eval", "test_annotations")
        return SourceSplits(train, test)

    def _split(self, folder: Path, records: list[str], annotations: list[str], split: str, key: str) -> Corpus:
        """The corpus of one split: its records labelled by the final judgements of its annotation files."""
        texts = dict(self._records(folder, records))
        judged: dict[tuple[str, str], str] = {}  # (document id, disease) -> the last judgement of the source read
        rejudged = changed = 0
        for name in annotations:
            for doc_id, disease, judgement in self._judgements(folder / name, texts, key):
                earlier = judged.get((doc_id, disease))
                if earlier is not None:
                    rejudged += 1
                    changed += earlier != judgement
                judged[doc_id, disease] = judgement
        if not judged:
            raise DataError(
                f"{folder} ({', '.join(annotations)}): no judgement has source={self.judgement_source!r}; set "
                f"dataset.judgement_source to the source the files hold, or dataset.{key} to the files of that source"
            )
        if rejudged:
            log.info(
                "dataset '%s': %d %s %s judgements were overridden by a later judgement of the same document and "
                "disease (%d of them to another judgement); the later one is kept",
                self.name,
                rejudged,
                split,
                self.judgement_source,
                changed,
            )
        labels: dict[str, list[str]] = {doc_id: [] for doc_id in texts}
        for (doc_id, disease), judgement in judged.items():
            if judgement in self.positive_judgements:
                labels[doc_id].append(disease)
        documents = (
            Document(where=where, text=text, labels=sorted(labels[doc_id]), doc_id=doc_id)
            for doc_id, (where, text) in texts.items()
        )
        corpus, _ = self.release_corpus(documents, f"{folder} ({', '.join(records)})", split)
        return corpus

    def _records(self, folder: Path, names: list[str]) -> Iterator[tuple[str, tuple[str, str]]]:
        """(id, (where, text)) of every record of the files `names`; an id given twice is refused."""
        seen: set[str] = set()
        for name in names:
            path = folder / name
            docs = _root(path).find("docs")
            if docs is None:
                raise DataError(f"{path} has no <docs> element; check that it is a records file of the release")
            for number, doc in enumerate(docs.findall("doc"), 1):
                doc_id, text = doc.get("id"), doc.findtext("text")
                if not doc_id or doc_id in seen:
                    raise DataError(
                        f"{path} <doc> number {number}: its id attribute is {'missing' if not doc_id else 'repeated'}; "
                        "each record needs its own id (check the file names in dataset.*_records)"
                    )
                seen.add(doc_id)
                yield doc_id, (f"{name} <doc> number {number}", text or "")

    def _judgements(self, path: Path, texts: dict[str, tuple[str, str]], key: str) -> Iterator[tuple[str, str, str]]:
        """(document id, disease, judgement) of each `judgement_source` judgement of `path`, in file order."""
        for diseases in _root(path).iter("diseases"):
            if diseases.get("source") != self.judgement_source:
                continue
            for index, disease in enumerate(diseases.findall("disease"), 1):
                where = f"{path} <diseases source={self.judgement_source!r}> <disease> number {index}"
                name = (disease.get("name") or "").strip()
                if not name:
                    raise DataError(
                        f"{where}: it has no name attribute; check that dataset.{key} names "
                        "the release's annotation files"
                    )
                for number, judged in enumerate(disease.findall("doc"), 1):
                    at = f"{where}, judgement number {number}"
                    if judged.get("id") not in texts:
                        raise DataError(
                            f"{at}: it names a document that no records file of its split holds; check "
                            f"dataset.{key} and the records files beside it"
                        )
                    if judged.get("judgment") not in JUDGEMENTS:
                        raise DataError(
                            f"{at}: its judgment attribute is not one of {', '.join(JUDGEMENTS)}; check that "
                            f"dataset.{key} names the release's annotation files"
                        )
                    yield str(judged.get("id")), name, str(judged.get("judgment"))


def _root(path: Path) -> ET.Element:
    """The root element of the XML file `path`, or an error naming the file and where it stops parsing."""
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as exc:
        line, column = exc.position
        raise DataError(
            f"{path} line {line} column {column}: not well-formed XML; check that it is the release's file, as "
            "downloaded"
        ) from None
