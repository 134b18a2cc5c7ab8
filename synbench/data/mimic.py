"""`mimic`: MIMIC-III v1.4 discharge summaries labelled with the ICD-9 chapters of their admission, read from the
PhysioNet release folder as downloaded (`NOTEEVENTS.csv.gz`, `DIAGNOSES_ICD.csv.gz`).

A document is one hospital admission (HADM_ID): its notes of `category`
("Discharge summary") not marked ISERROR, the reports (DESCRIPTION
"Report") in chart order, and under `addenda: append` its addenda after
them; an admission with no report is dropped (counted). Its labels are the
ICD-9-CM chapters of the admission's DIAGNOSES_ICD codes: the 17 chapters of
numeric codes by their first three digits (`chapters`, written below from
the ICD-9-CM tabular list), V codes (supplementary factors) and E codes
(external causes) to `v_code_label` / `e_code_label`, no label when null
(our choice: neither is a chapter of diseases). MIMIC has no official split:
`eval_fraction` of the admissions is held out with `split_seed`, whole
patients (SUBJECT_ID) at a time, so no patient is in both splits.

Both files are read as CSV with a header line (gunzipped when named .gz); a
row whose field count is not the header's is refused naming its line, since
its TEXT would be read from another column.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from synbench.core.errors import ConfigError, DataError
from synbench.data.common import SourceSplits
from synbench.data.files import delimited_rows
from synbench.data.raw import Document, ReleaseDataset, check_columns
from synbench.data.records import Row

log = logging.getLogger(__name__)

NOTE_COLUMNS = ("ROW_ID", "SUBJECT_ID", "HADM_ID", "CHARTDATE", "CATEGORY", "DESCRIPTION", "ISERROR", "TEXT")
DIAGNOSIS_COLUMNS = ("HADM_ID", "ICD9_CODE")
REPORT = "Report"  # NOTEEVENTS' DESCRIPTION of a discharge summary's main note (the others are addenda)
ADDENDA = ("drop", "append")
# ICD-9-CM's 17 chapters of numeric codes, by their first three digits
ICD9_CHAPTERS = {
    "Infectious and parasitic diseases": "001-139",
    "Neoplasms": "140-239",
    "Endocrine, nutritional and metabolic diseases, and immunity disorders": "240-279",
    "Diseases of the blood and blood-forming organs": "280-289",
    "Mental disorders": "290-319",
    "Diseases of the nervous system and sense organs": "320-389",
    "Diseases of the circulatory system": "390-459",
    "Diseases of the respiratory system": "460-519",
    "Diseases of the digestive system": "520-579",
    "Diseases of the genitourinary system": "580-629",
    "Complications of pregnancy, childbirth, and the puerperium": "630-679",
    "Diseases of the skin and subcutaneous tissue": "680-709",
    "Diseases of the musculoskeletal system and connective tissue": "710-739",
    "Congenital anomalies": "740-759",
    "Certain conditions originating in the perinatal period": "760-779",
    "Symptoms, signs, and ill-defined conditions": "780-799",
    "Injury and poisoning": "800-999",
}
CODE_RANGE = re.compile(r"^(\d{3})-(\d{3})$")


@dataclass
class Admission:
    """The kept notes of one admission: (chart date, ROW_ID, text) of its reports and of its addenda."""

    subject: str
    where: str  # the line of its first kept note, for messages
    reports: list[tuple[str, int, str]] = field(default_factory=list)
    addenda: list[tuple[str, int, str]] = field(default_factory=list)


@dataclass(kw_only=True)
class MimicDataset(ReleaseDataset):
    """MIMIC-III discharge summaries by admission, labelled with ICD-9 chapters (see the module docstring)."""

    name: str = "mimic"
    notes_file: str = "NOTEEVENTS.csv.gz"  # in data_dir; gzipped or not (by its suffix)
    diagnoses_file: str = "DIAGNOSES_ICD.csv.gz"
    category: str = "Discharge summary"  # NOTEEVENTS' CATEGORY of the notes kept
    addenda: str = "drop"  # ADDENDA: drop (an admission's reports only) | append (its addenda after its reports)
    chapters: dict[str, str] = field(default_factory=lambda: dict(ICD9_CHAPTERS))  # label -> "first-last" 3 digits
    v_code_label: str | None = None  # the label of a V code (supplementary factors); null: it gives none
    e_code_label: str | None = None  # the label of an E code (external causes); null: it gives none

    release_folder = "mimic-iii-clinical-database-1.4"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.addenda not in ADDENDA:
            raise ConfigError(f"dataset.addenda={self.addenda!r} is not one of {', '.join(ADDENDA)}")
        self._chapter_of: list[str | None] = [None] * 1000  # the label of each three-digit code prefix
        for label, span in self.chapters.items():
            match = CODE_RANGE.match(str(span))
            first, last = (int(match.group(1)), int(match.group(2))) if match else (1, 0)
            if first > last:
                raise ConfigError(
                    f"dataset.chapters: the range of {label!r} is not 'first-last' in three digits (e.g. '001-139')"
                )
            for prefix in range(first, last + 1):
                if self._chapter_of[prefix] is not None:
                    raise ConfigError(f"dataset.chapters: the range of {label!r} overlaps another chapter's")
                self._chapter_of[prefix] = label
        named = [*self.chapters, *(x for x in (self.v_code_label, self.e_code_label) if x is not None)]
        if self.label_space is not None and set(named) - set(self.label_space):
            raise ConfigError(
                f"dataset '{self.name}': the chapter labels {sorted(set(named) - set(self.label_space))} are not in "
                "dataset.label_space; list every chapter (and the V/E code labels) there"
            )

    def release_files(self) -> dict[str, list[str]]:
        return {"notes_file": [self.notes_file], "diagnoses_file": [self.diagnoses_file]}

    def read_release(self, folder: Path) -> SourceSplits:
        notes_path, diagnoses_path = folder / self.notes_file, folder / self.diagnoses_file
        read = self._admissions(notes_path)
        admissions = {hadm: admission for hadm, admission in read.items() if admission.reports}
        if len(admissions) < len(read):
            log.info("dataset '%s': dropped %d admissions with no report", self.name, len(read) - len(admissions))
        labels = self._labels(diagnoses_path)
        if self.unlabelled_label is None and not any(labels.get(hadm) for hadm in admissions):
            coded = sum(hadm in labels for hadm in admissions)
            raise DataError(
                f"no admission of {notes_path} has a label: of its {len(admissions)} admissions with a "
                f"{self.category} report, {coded} have only diagnosis codes that give none (V / E codes while "
                "dataset.v_code_label / e_code_label are null, or codes outside dataset.chapters) and "
                f"{len(admissions) - coded} have no row in {diagnoses_path}; check that both files are of one "
                "release, or set dataset.v_code_label / e_code_label to label those codes, or dataset.unlabelled_label "
                "to keep admissions without a label"
            )
        documents = (
            Document(
                where=admission.where,
                text="\n\n".join(text for *_, text in self._notes_of(admission)),
                labels=sorted(labels.get(hadm, ())),
                doc_id=f"admission-{hadm}",
                group=admission.subject,
            )
            for hadm, admission in sorted(admissions.items(), key=lambda item: int(item[0]))
        )
        train, groups = self.release_corpus(documents, str(notes_path), "train")
        return SourceSplits(train, None, groups)

    def _notes_of(self, admission: Admission) -> list[tuple[str, int, str]]:
        """The notes of an admission that make its document, in chart order (reports first)."""
        return sorted(admission.reports) + (sorted(admission.addenda) if self.addenda == "append" else [])

    def _admissions(self, path: Path) -> dict[str, Admission]:
        """The kept notes of `path` by HADM_ID; notes without an admission are dropped (counted). A file without
        one kept note is refused: no setting could make a document of it."""
        admissions: dict[str, Admission] = {}
        notes = no_admission = errors = 0
        for where, row in _release_rows(path, NOTE_COLUMNS, "notes_file"):
            notes += 1
            if row["CATEGORY"].strip() != self.category:
                continue
            if row["ISERROR"].strip() == "1":
                errors += 1
                continue
            hadm, row_id = row["HADM_ID"].strip(), row["ROW_ID"].strip()
            if not hadm:
                no_admission += 1
                continue
            if not hadm.isdigit() or not row_id.isdigit():
                raise DataError(
                    f"{path} {where}: HADM_ID or ROW_ID is not a whole number; check that dataset.notes_file names "
                    "MIMIC-III's NOTEEVENTS file"
                )
            admission = admissions.setdefault(hadm, Admission(subject=row["SUBJECT_ID"].strip(), where=where))
            note = (row["CHARTDATE"], int(row_id), row["TEXT"])
            (admission.reports if row["DESCRIPTION"].strip() == REPORT else admission.addenda).append(note)
        log.info(
            "dataset '%s': %d admissions with %s notes (%d notes marked ISERROR and %d without an admission dropped)",
            self.name,
            len(admissions),
            self.category,
            errors,
            no_admission,
        )
        if not any(admission.reports for admission in admissions.values()):
            raise DataError(
                f"{path}: none of its {notes} notes is a report (DESCRIPTION {REPORT!r}) of CATEGORY "
                f"{self.category!r} with an HADM_ID and not marked ISERROR; check dataset.category and that "
                "dataset.notes_file names MIMIC-III's NOTEEVENTS file"
            )
        return admissions

    def _labels(self, path: Path) -> dict[str, set[str]]:
        """The chapter labels of each admission's diagnosis codes in `path` (an empty set: its codes give none)."""
        labels: dict[str, set[str]] = defaultdict(set)
        for where, row in _release_rows(path, DIAGNOSIS_COLUMNS, "diagnoses_file"):
            found = labels[row["HADM_ID"].strip()]
            label = self._chapter(row["ICD9_CODE"].strip(), f"{path} {where}")
            if label is not None:
                found.add(label)
        return labels

    def _chapter(self, code: str, at: str) -> str | None:
        """The label of one ICD-9 code (None: a V or E code without a label, or no code)."""
        if not code:
            return None
        if code[0] in "Vv":
            return self.v_code_label
        if code[0] in "Ee":
            return self.e_code_label
        if len(code) < 3 or not code[:3].isdigit():
            raise DataError(
                f"{at}: column ICD9_CODE holds no ICD-9 code (three digits, or V / E and digits); check that "
                "dataset.diagnoses_file names MIMIC-III's DIAGNOSES_ICD file"
            )
        return self._chapter_of[int(code[:3])]


def _release_rows(path: Path, columns: tuple[str, ...], key: str) -> Iterator[Row]:
    """The rows of the release's CSV file `path` (gzipped when its name ends .gz), refused unless its header holds
    `columns`; a row whose field count is not the header's is refused naming its line (a TEXT read from the wrong
    column would make another note of it)."""
    return delimited_rows(
        path,
        ",",  # MIMIC-III's CSVs
        key=key,
        fix="the file is malformed; download it again, or re-export it with every text field quoted",
        check_header=lambda header: check_columns(header, columns, str(path), key),
    )
