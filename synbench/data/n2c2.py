"""`n2c2_2008`: the n2c2 (i2b2) 2008 Obesity Challenge read from its XML files, by the names they are released
under (DBMI Data Portal).

Records files hold `<root><docs><doc id="..."><text>...</text></doc>...`;
annotation files hold `<diseaseset><diseases source="textual|intuitive">
<disease name="Asthma"><doc id="..." judgment="Y|N|Q|U"/>...`. A disease is
a label of a document when one of its `judgement_sources` judges it one of
`positive_judgements` (the config's rule; by default Y, present, in either
source). The release's own split is kept: the training files are train, the
test files eval.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError, DataError
from synbench.data.common import SourceSplits
from synbench.data.raw import Document, ReleaseDataset

JUDGEMENT_SOURCES = ("textual", "intuitive")
JUDGEMENTS = ("Y", "N", "Q", "U")  # present, absent, questionable, unmentioned


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
    test_annotations: list[str] = field(default_factory=lambda: ["obesity_standoff_annotations_test.xml"])
    judgement_sources: list[str] = field(default_factory=lambda: list(JUDGEMENT_SOURCES))
    positive_judgements: list[str] = field(default_factory=lambda: ["Y"])

    release_folder = "n2c2 2008 obesity"

    def __post_init__(self) -> None:
        super().__post_init__()
        for key, values, allowed in (
            ("judgement_sources", self.judgement_sources, JUDGEMENT_SOURCES),
            ("positive_judgements", self.positive_judgements, JUDGEMENTS),
        ):
            if not values or set(values) - set(allowed):
                raise ConfigError(f"dataset.{key}={values} must list one or more of {', '.join(allowed)}")

    def release_files(self) -> dict[str, list[str]]:
        return {
            "train_records": self.train_records,
            "train_annotations": self.train_annotations,
            "test_records": self.test_records,
            "test_annotations": self.test_annotations,
        }

    def read_release(self, folder: Path) -> SourceSplits:
        train = self._split(folder, self.train_records, self.train_annotations, "train", "train_annotations")
        test = self._split(folder, self.test_records, self.test_annotations, "eval", "test_annotations")
        return SourceSplits(train, test)

    def _split(self, folder: Path, records: list[str], annotations: list[str], split: str, key: str) -> Corpus:
        """The corpus of one split: its records labelled by its annotation files."""
        texts = dict(self._records(folder, records))
        labels: dict[str, set[str]] = defaultdict(set)
        for name in annotations:
            for doc_id, disease in self._positive(folder / name, texts, key):
                labels[doc_id].add(disease)
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

    def _positive(self, path: Path, texts: dict[str, tuple[str, str]], key: str) -> Iterator[tuple[str, str]]:
        """(document id, disease) of each judgement of `path` that makes the disease a label by the config's rule."""
        for diseases in _root(path).iter("diseases"):
            if diseases.get("source") not in self.judgement_sources:
                continue
            for index, disease in enumerate(diseases.findall("disease"), 1):
                name = disease.get("name") or ""
                for number, judged in enumerate(disease.findall("doc"), 1):
                    if judged.get("id") not in texts:
                        raise DataError(
                            f"{path} <disease> number {index}, judgement number {number}: it names a document that "
                            f"no records file of its split holds; check dataset.{key} and the records files beside it"
                        )
                    if judged.get("judgment") in self.positive_judgements:
                        yield str(judged.get("id")), name


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
