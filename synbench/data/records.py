"""Raw records to a validated `Corpus`: the one place every loader checks its input.

Every loader (files, Hugging Face, the built-in drug reviews) reads rows its
own way and hands them here as `(where, record)` pairs, `where` saying where
the row came from ("line 17", "row 3"). All checks and clean-up live here, so
a JSONL file and a Parquet file with the same content give the same corpus,
and every error names the source, the row and the field and says what to do.
Messages may quote field names and label values, never document text: the
texts are the private data this benchmark protects.
"""
from __future__ import annotations

import html
import logging
import math
import numbers
from dataclasses import replace
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from synbench.corpus import Corpus
from synbench.errors import DataError

log = logging.getLogger(__name__)

Row = tuple[str, Mapping[str, Any]]
"""A raw record and where it came from in its source ("line 17", "row 3")."""


def listing(items: Sequence[Any], limit: int = 30) -> str:
    """Quote `items` for a message, cut after `limit` so a 4,000-label space stays readable."""
    shown = ", ".join(repr(str(i)) for i in items[:limit])
    return shown if len(items) <= limit else f"{shown}, ... ({len(items)} in all)"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _field(record: Mapping[str, Any], field: str, key: str, at: str) -> Any:
    """`record[field]`, or an error listing the fields the record does have."""
    if field not in record:
        raise DataError(
            f"{at}: the record has no field {field!r}; its fields are {listing(list(record))}; "
            f"set dataset.{key}=<the field that holds it>"
        )
    return record[field]


def _one_label(value: Any, label_names: Sequence[str] | None, label_field: str, at: str) -> str:
    """One label as a string; integers are class indices when `label_names` is given."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, numbers.Integral) and label_names is not None:
        if not 0 <= int(value) < len(label_names):
            raise DataError(
                f"{at}: field {label_field!r} holds class index {int(value)} but the dataset has "
                f"{len(label_names)} class names; fix the record"
            )
        return str(label_names[int(value)])
    return str(value).strip()


def _labels(
    value: Any, label_sep: str | None, label_names: Sequence[str] | None, label_field: str, at: str
) -> list[str]:
    """Every label a field holds (a string, an integer, or a list of them), deduplicated, in order."""
    if _missing(value):
        items: list[Any] = []
    elif isinstance(value, str):
        items = value.split(label_sep) if label_sep else [value]
    elif isinstance(value, (list, tuple, np.ndarray)):
        items = [v for v in value if not _missing(v)]
    else:
        items = [value]
    labels = (_one_label(v, label_names, label_field, at) for v in items)
    return list(dict.fromkeys(label for label in labels if label))


def _text(value: Any, text_field: str, at: str) -> str:
    """The document text, HTML entities decoded and surrounding whitespace removed."""
    if _missing(value):
        value = ""
    if not isinstance(value, str):
        raise DataError(f"{at}: field {text_field!r} holds a value of type {type(value).__name__}, not text; fix the record")
    text = html.unescape(value).strip()
    if not text:
        raise DataError(f"{at}: field {text_field!r} is empty; remove the record or fix the text")
    return text


def records_to_corpus(
    rows: Iterable[Row],
    *,
    source: str,
    name: str,
    split: str,
    text_field: str = "text",
    label_field: str = "label",
    id_field: str | None = None,
    multi_label: bool = False,
    label_space: Sequence[str] | None = None,
    label_sep: str | None = None,
    label_names: Sequence[str] | None = None,
) -> Corpus:
    """Validate `rows` from `source` (a path or a description) into the corpus `<name>-<split>`.

    Labels may be a string (split on `label_sep` when given), an integer
    (mapped through `label_names`, the class names of a Hugging Face
    ClassLabel, when given) or a list. Ids come from `id_field`, else
    `<name>-<split>-<i>`. With `label_space=None` nothing is checked against a
    label space and the corpus gets its own sorted labels; see
    `infer_label_space` for sharing one across splits.
    """
    space = [str(s) for s in label_space] if label_space is not None else None
    allowed = set(space) if space is not None else None
    ids: list[str] = []
    texts: list[str] = []
    labels: list[tuple[str, ...]] = []
    first_seen: dict[str, str] = {}
    for i, (where, record) in enumerate(rows):
        at = f"{source} {where}"
        text = _text(_field(record, text_field, "text_field", at), text_field, at)
        found = _labels(_field(record, label_field, "label_field", at), label_sep, label_names, label_field, at)
        if not found:
            raise DataError(f"{at}: field {label_field!r} is empty (no label); every record needs at least one label")
        if not multi_label and len(found) > 1:
            raise DataError(
                f"{at}: field {label_field!r} has {len(found)} labels ({listing(found)}) but the dataset is "
                f"single-label; keep one label or set dataset.multi_label=true"
            )
        if allowed is not None:
            unknown = next((label for label in found if label not in allowed), None)
            if unknown is not None:
                raise DataError(
                    f"{at}: label {unknown!r} is not in the label space ({listing(space)}); fix the record "
                    f"or set dataset.label_space to include it (null infers it from the data)"
                )
        doc_id = f"{name}-{split}-{i}"
        if id_field is not None:
            raw_id = _field(record, id_field, "id_field", at)
            doc_id = "" if _missing(raw_id) else str(raw_id).strip()
            if not doc_id:
                raise DataError(f"{at}: field {id_field!r} (the id) is empty; give every record an id")
            if doc_id in first_seen:
                raise DataError(
                    f"{at}: id {doc_id!r} was already used at {first_seen[doc_id]}; ids in field {id_field!r} "
                    f"must be unique (or set dataset.id_field=null to number the records)"
                )
            first_seen[doc_id] = where
        ids.append(doc_id)
        texts.append(text)
        labels.append(tuple(found))
    if not texts:
        raise DataError(f"{source} has no records; check that it is the right file or split")
    if space is None:
        space = sorted({label for ls in labels for label in ls})
    return Corpus.build(texts, labels, space, ids=ids, multi_label=multi_label, name=f"{name}-{split}")


def infer_label_space(name: str, train: Corpus, eval: Corpus | None) -> tuple[Corpus, Corpus | None]:
    """Give both splits the sorted union of their labels, for datasets whose config sets no label space.

    The label space then comes from the private data without noise; it is
    treated as public (as the paper does), with a warning, and results flag
    the job `label_space_inferred: true`. Set `dataset.label_space` to avoid it.
    """
    corpora = [c for c in (train, eval) if c is not None]
    space = tuple(sorted({label for c in corpora for ls in c.labels for label in ls}))
    log.warning(
        "dataset '%s': label_space not set; inferred %d labels from the %s labels (sorted); the label space is "
        "treated as public, which is not DP for the private labels: set dataset.label_space to the task's labels",
        name, len(space), "train and eval" if eval is not None else "train",
    )
    return replace(train, label_space=space), (replace(eval, label_space=space) if eval is not None else None)
