"""Fabricated releases in their publishers' layouts (MIMIC-III, PsyTAR, n2c2 2008): the real file, column, sheet and
element names, gzip and XML as shipped, a few dozen made-up records. No real data: every text below is invented.

Each writer returns the folder; the tests hold the answers the readers must give for them.
"""

from __future__ import annotations

import csv
import gzip
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Sequence

NOTE_HEADER = [
    "ROW_ID",
    "SUBJECT_ID",
    "HADM_ID",
    "CHARTDATE",
    "CHARTTIME",
    "STORETIME",
    "CATEGORY",
    "DESCRIPTION",
    "CGID",
    "ISERROR",
    "TEXT",
]
DIAGNOSIS_HEADER = ["ROW_ID", "SUBJECT_ID", "HADM_ID", "SEQ_NUM", "ICD9_CODE"]
SECRET = "Zelda Quibblesworth"  # a made-up name in one note: it must never reach a message, a manifest or a log


def note_text(subject: int, admission: int, kind: str) -> str:
    """A made-up note with what breaks naive CSV readers (commas, quotes, blank lines) and text that looks like an
    HTML character reference, which a reader must keep as written."""
    return (
        f'Admission Date: [**2150-1-{admission % 28 + 1}**]\n\n{kind} for patient {subject}, "stable", '
        f"seen by Dr. X, T 38.5&deg C, K &lt; 3.5, discharged home.\nPlan: follow up, labs, and rest."
    )


# (SUBJECT_ID, HADM_ID, ICD9 codes): 24 patients, 36 admissions; codes cover every chapter, V and E codes
ADMISSIONS = [
    (s, 100000 + 10 * s + k, codes)
    for s, k, codes in [
        (1, 0, ["0389", "4019", "V4581"]),  # infectious + circulatory; the V code gives no label
        (1, 1, ["1629", "25000"]),  # neoplasms + endocrine
        (2, 0, ["V3000", "V053"]),  # only V codes: no label, dropped by default
        (3, 0, ["2851", "29620"]),  # blood + mental
        (3, 1, ["3310", "41401", "E8782"]),  # nervous + circulatory; E code
        (3, 2, ["486", "5070"]),  # respiratory
        (4, 0, ["5712", "5849"]),  # digestive + genitourinary
        (5, 0, ["64891", "6826"]),  # pregnancy + skin
        (6, 0, ["7140", "7454"]),  # musculoskeletal + congenital
        (7, 0, ["7742", "78039"]),  # perinatal + symptoms
        (8, 0, ["8052", "9690", "E9500"]),  # injury
        *[(s, 0, ["4280", "5849"]) for s in range(9, 17)],
        *[(s, k, ["0389", "486"]) for s in range(17, 21) for k in range(2)],
        *[(s, k, ["25000", "4019", "2724"]) for s in range(21, 25) for k in range(2)],
        (24, 2, ["99859", "0389"]),
    ]
]


def write_mimic(
    folder: Path,
    gzipped: bool = True,
    summaries: Sequence[str] | None = None,
    extra_notes: Sequence[Sequence[object]] = (),
    v_codes_only: bool = False,
) -> Path:
    """A mimic-iii-clinical-database-1.4 folder: NOTEEVENTS and DIAGNOSES_ICD (gzipped as PhysioNet ships them);
    `summaries`, one per admission, replace the discharge summaries' made-up text (long notes that share
    boilerplate, say); `extra_notes` are written after the notes as given (a malformed row, say); with
    `v_codes_only` every admission's diagnoses are V codes."""
    folder.mkdir(parents=True, exist_ok=True)
    notes, diagnoses = [], []
    row = 0
    for number, (subject, hadm, codes) in enumerate(ADMISSIONS):
        for kind, description, error in (("Discharge summary", "Report", ""), ("Nursing/other", "Report", "")):
            row += 1
            text = note_text(subject, hadm, kind)
            if summaries is not None and kind == "Discharge summary":
                text = summaries[number]
            notes.append([row, subject, hadm, "2150-01-02", "", "", kind, description, "", error, text])
        for seq, code in enumerate(["V3000", "V053"] if v_codes_only else codes, 1):
            diagnoses.append([len(diagnoses) + 1, subject, hadm, seq, code])
    first = ADMISSIONS[0]
    # the first admission: an addendum (before its report in the file), an ISERROR note, a note with the secret
    notes.insert(
        0,
        [
            9001,
            first[0],
            first[1],
            "2150-01-03",
            "",
            "",
            "Discharge summary",
            "Addendum",
            "",
            "",
            "ADDENDUM: labs, late.",
        ],
    )
    notes.append(
        [9002, first[0], first[1], "2150-01-02", "", "", "Discharge summary", "Report", "", "1", "WRONG PATIENT NOTE"]
    )
    notes.append(
        [9003, 3, 100030, "2150-01-01", "", "", "Discharge summary", "Report", "", "", f"Earlier report; {SECRET}."]
    )
    notes.append([9004, 30, "", "2150-01-01", "", "", "Discharge summary", "Report", "", "", "No admission."])
    notes.extend(list(row) for row in extra_notes)
    diagnoses.append([len(diagnoses) + 1, 30, 999999, 1, ""])  # an empty code
    suffix = ".csv.gz" if gzipped else ".csv"
    _write_csv(folder / f"NOTEEVENTS{suffix}", NOTE_HEADER, notes, gzipped)
    _write_csv(folder / f"DIAGNOSES_ICD{suffix}", DIAGNOSIS_HEADER, diagnoses, gzipped)
    return folder


def _write_csv(path: Path, header: list[str], rows: list[list[object]], gzipped: bool) -> None:
    opener = gzip.open if gzipped else open
    with opener(path, "wt", newline="", encoding="utf-8") as f:  # type: ignore[operator]
        writer = csv.writer(f, quoting=csv.QUOTE_MINIMAL)
        writer.writerow(header)
        writer.writerows(rows)


PSYTAR_HEADER = ["drug_id", "sentence_index", "sentences", "ADR", "WD", "EF", "INF", "SSI", "DI", "Findings", "others"]
# (drug_id, [(sentence, {column: mark})]): 10 reviews, 34 sentences, marks as the release writes them
REVIEWS = [
    (
        f"{drug}.{n}",
        [
            (f"I took {drug} for {n} weeks, felt sleepy.", {"ADR": "!"}),
            (f'It helped my mood, "a lot" (review {n}).', {"EF": "*"}),
            ("Stopping it gave me brain zaps.", {"WD": "!", "ADR": "*"}),
            ("I was prescribed it for anxiety.", {"DI": "!", "others": 1}),
        ][: 3 + n % 2],
    )
    for drug in ("zoloft", "lexapro")
    for n in range(1, 6)
]


def write_psytar(folder: Path, extra_rows: list[list[object]] | None = None) -> Path:
    """A PsyTAR download folder: PsyTAR_dataset.xlsx with its Sample and Sentence_Labeling sheets."""
    import openpyxl

    folder.mkdir(parents=True, exist_ok=True)
    workbook = openpyxl.Workbook()
    workbook.active.title = "Sample"
    workbook["Sample"].append(["drug_id", "age", "gender"])
    sheet = workbook.create_sheet("Sentence_Labeling")
    sheet.append(PSYTAR_HEADER)
    for review, sentences in REVIEWS:
        for index, (text, marks) in enumerate(sentences, 1):
            sheet.append([review, index, text, *(marks.get(column) for column in PSYTAR_HEADER[3:])])
    sheet.append(["zoloft.9", 1, "It was ok I guess.", None, None, None, None, None, None, None, None])  # no label
    sheet.append(["zoloft.9", 2, None, "!", None, None, None, None, None, None, None])  # no sentence
    sheet.append(["zoloft.9", 3, "Gained weight; tired", " * ", None, None, None, "!", None, "x", 0])
    for row in extra_rows or []:
        sheet.append(row)
    workbook.save(folder / "PsyTAR_dataset.xlsx")
    return folder


DISEASES = ["Asthma", "CAD", "Obesity", "Diabetes", "Hypertension"]


# The judgements the last training addendum gives again, by source: (document, disease) -> the new judgement
REJUDGED = {"intuitive": {(3, "Obesity"): "N", (4, "Obesity"): "Y"}, "textual": {(9, "Asthma"): "N"}}


def n2c2_doc(doc_id: int) -> str:
    return (
        f'Discharge summary {doc_id} & notes <de-identified>:\nPatient stable, weight "high", BMI 41, 38.5&deg C, '
        "K &lt; 3.5."
    )


def write_n2c2(folder: Path, test_by_source: bool = False) -> Path:
    """An n2c2 2008 folder: the 8 XML files by their release names, training records over two files and
    annotations over four (textual and intuitive sources; the last addendum judges a few documents' diseases
    again, `REJUDGED`), the test set in one of each, or with `test_by_source` its judgements in one file per
    source (obesity_standoff_annotations_test_textual.xml and ..._intuitive.xml, as some distributions ship
    them)."""
    folder.mkdir(parents=True, exist_ok=True)
    train_ids, test_ids = list(range(1, 25)), list(range(101, 113))
    _records(folder / "obesity_patient_records_training.xml", train_ids[:16])
    _records(folder / "obesity_patient_records_training2.xml", train_ids[16:])
    _records(folder / "obesity_patient_records_test.xml", test_ids)
    judgements = {doc: _judged(doc) for doc in train_ids + test_ids}
    annotation_files = [
        "obesity_standoff_annotations_training.xml",
        "obesity_standoff_annotations_training_addendum.xml",
        "obesity_standoff_annotations_training_addendum2.xml",
        "obesity_standoff_annotations_training_addendum3.xml",
    ]
    for i, name in enumerate(annotation_files):  # each file holds a quarter of the diseases' judgements
        again = REJUDGED if i == len(annotation_files) - 1 else {}
        _annotations(folder / name, {doc: judgements[doc] for doc in train_ids}, DISEASES[i::4], again)
    test = {doc: judgements[doc] for doc in test_ids}
    if test_by_source:
        for source in ("textual", "intuitive"):
            _annotations(folder / f"obesity_standoff_annotations_test_{source}.xml", test, DISEASES, sources=[source])
    else:
        _annotations(folder / "obesity_standoff_annotations_test.xml", test, DISEASES)
    return folder


def _judged(doc: int) -> dict[str, dict[str, str]]:
    """The made-up judgements of a document: source -> disease -> Y/N/Q/U."""
    textual = {"Asthma": "Y" if doc % 3 == 0 else "N", "CAD": "Q" if doc % 4 == 0 else "U", "Obesity": "N"}
    intuitive = {"Obesity": "Y" if doc % 2 else "N", "Diabetes": "Y" if doc % 5 == 0 else "N", "Hypertension": "N"}
    return {"textual": textual, "intuitive": intuitive}


def _records(path: Path, ids: list[int]) -> None:
    root = ET.Element("root")
    docs = ET.SubElement(root, "docs")
    for doc_id in ids:
        doc = ET.SubElement(docs, "doc", id=str(doc_id))
        ET.SubElement(doc, "text").text = n2c2_doc(doc_id)
    ET.ElementTree(root).write(path, encoding="UTF-8", xml_declaration=True)


def _annotations(
    path: Path,
    judgements: dict[int, dict[str, dict[str, str]]],
    diseases: list[str],
    again: dict[str, dict[tuple[int, str], str]] | None = None,
    sources: Sequence[str] = ("textual", "intuitive"),
) -> None:
    """A standoff annotation file: per source, the judgements of `diseases`, then (an addendum) a <diseases>
    element per source of `again` judging those documents' diseases once more."""
    root = ET.Element("diseaseset")
    for source in sources:
        element = ET.SubElement(root, "diseases", source=source)
        for disease in diseases:
            node = ET.SubElement(element, "disease", name=disease)
            for doc_id, judged in judgements.items():
                if disease in judged[source]:
                    ET.SubElement(node, "doc", id=str(doc_id), judgment=judged[source][disease])
    for source, rejudged in (again or {}).items():
        element = ET.SubElement(root, "diseases", source=source)
        for (doc_id, disease), judgment in rejudged.items():
            ET.SubElement(ET.SubElement(element, "disease", name=disease), "doc", id=str(doc_id), judgment=judgment)
    ET.ElementTree(root).write(path, encoding="UTF-8", xml_declaration=True)


def n2c2_labels(doc: int, source: str = "intuitive") -> set[str]:
    """The diseases a fixture document's final `source` judgement (the addendum's where it judges again) marks Y."""
    judged = {**_judged(doc)[source], **{d: j for (i, d), j in REJUDGED[source].items() if i == doc}}
    return {disease for disease, mark in judged.items() if mark == "Y"}
