"""Raw records to a validated `Corpus`: the one place every loader checks its input.

Every loader (files, Hugging Face, the built-in drug reviews) reads rows its
own way and hands them here as `(where, record)` pairs, `where` saying where
the row came from ("line 17", "row 3"). All checks and clean-up live here, so
a JSONL file and a Parquet file with the same content give the same corpus,
and every error names the source, the row and the field and says what to do.
Messages never quote anything read from a record, not even a field name or a
label: a mis-set `label_field` makes a label the document text, and a CSV
without a header line makes its first document the "field names". They quote
only what the config holds (field names asked for, a configured label space).
"""

from __future__ import annotations

import html
import logging
import math
import numbers
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from synbench.core.corpus import Corpus
from synbench.core.errors import DataError

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
    """`record[field]`, or an error saying which config key to set (the record's own field names are not quoted)."""
    if field not in record:
        raise DataError(
            f"{at}: the record has no field {field!r} (it has {len(record)} field(s)); set dataset.{key}=<the field "
            f"that holds it>, as named by the JSON keys or the CSV/TSV header line (a CSV/TSV file needs a header line)"
        )
    return record[field]


def _one_label(value: Any, label_names: Sequence[str] | None, label_field: str, at: str) -> str:
    """One label as a string; integers are class indices when `label_names` is given."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, numbers.Integral) and label_names is not None:
        if not 0 <= int(value) < len(label_names):
            raise DataError(
                f"{at}: field {label_field!r} holds a class index outside 0..{len(label_names) - 1} (the dataset has "
                f"{len(label_names)} class names); fix the record"
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


def _top_scored(
    value: Any, label_map: Mapping[str, str], space: Sequence[str] | None, label_field: str, at: str
) -> list[str]:
    """The class with the largest score of a class -> score mapping, as the source names it ([] when missing).

    For a release that scores every class rather than naming one (LC37FND's
    `sentiment`: negative / neutral / positive probabilities). A tie goes to
    the class first in `space` (after `label_map`; the sorted names when no
    space is configured, the order an inferred space has), so the rule does
    not depend on the order the source wrote its keys in.
    """
    if _missing(value):
        return []
    if not isinstance(value, Mapping):
        raise DataError(
            f"{at}: field {label_field!r} holds a value of type {type(value).__name__}, not a mapping of class -> "
            "score (dataset.label_from_scores=true); check that dataset.label_field names the scores field, or set "
            "dataset.label_from_scores=false for a field that holds the label itself"
        )
    scores: dict[str, float] = {}
    for key, score in value.items():
        if isinstance(score, bool) or not isinstance(score, numbers.Real) or math.isnan(score):
            raise DataError(
                f"{at}: field {label_field!r} holds a class score that is not a number (dataset.label_from_scores="
                "true reads the class with the largest score); fix the record"
            )
        scores[str(key)] = float(score)
    if not scores:
        return []
    order = space if space is not None else sorted({label_map.get(key, key) for key in scores})
    position = {label: i for i, label in enumerate(order)}
    # in label-space order (a class outside it last), so max, which keeps the first of equal scores, breaks ties
    ranked = sorted(scores, key=lambda key: position.get(label_map.get(key, key), len(position)))
    return [max(ranked, key=scores.__getitem__)]


# The longest document a dataset accepts by default (`dataset.max_chars`): a long clinical note or court ruling is
# well under it; a 50 MB line would crash the tokenizer (an abort at about 7 GB RSS).
MAX_CHARS = 1_000_000


def _text(value: Any, text_field: str, at: str, max_chars: int, html_entities: bool) -> str:
    """The document text without surrounding whitespace (HTML character references decoded only with
    `html_entities`: a clinical note's `&deg` or `&lt;` is the publisher's text); refused over `max_chars`."""
    if _missing(value):
        value = ""
    if not isinstance(value, str):
        raise DataError(
            f"{at}: field {text_field!r} holds a value of type {type(value).__name__}, not text; fix the record"
        )
    if len(value) > max_chars:
        raise DataError(
            f"{at}: field {text_field!r} holds {len(value):,} characters, more than dataset.max_chars="
            f"{max_chars:,}; split or shorten the record, or raise dataset.max_chars"
        )
    text = (html.unescape(value) if html_entities else value).strip()
    if not text:
        raise DataError(f"{at}: field {text_field!r} is empty; remove the record or fix the text")
    return text


@dataclass(frozen=True)
class _LabelRule:
    """The label options of `records_to_corpus`, held once so that each record's labels are read by one call (the
    options are the same for every record of a source, and the label space's set is built once, not per record)."""

    label_field: str
    sep: str | None
    names: Sequence[str] | None
    label_map: Mapping[str, str]
    unlabelled: str | None
    from_scores: bool
    multi_label: bool
    space: list[str] | None
    allowed: frozenset[str] | None

    def labels(self, record: Mapping[str, Any], at: str) -> tuple[str, ...]:
        """The record's labels, renamed by the label map, checked for count and space: every loader gets the same
        refusals for the same content, each naming the config key that fixes it."""
        value = _field(record, self.label_field, "label_field", at)
        if self.from_scores:
            found = _top_scored(value, self.label_map, self.space, self.label_field, at)
        else:
            found = _labels(value, self.sep, self.names, self.label_field, at)
        if self.label_map:
            found = list(dict.fromkeys(self.label_map.get(label, label) for label in found))
        if not found and self.unlabelled is not None:
            found = [self.unlabelled]
        if not found:
            raise DataError(
                f"{at}: field {self.label_field!r} is empty (no label); every record needs at least one label, or set "
                "dataset.unlabelled_label to the label such a record means (HoC: NULL)"
            )
        if not self.multi_label and len(found) > 1:
            raise DataError(
                f"{at}: field {self.label_field!r} has {len(found)} labels but the dataset is single-label; keep one "
                f"label, set dataset.multi_label=true, or check that dataset.label_field names the label field"
            )
        if self.space is not None and self.allowed is not None and any(label not in self.allowed for label in found):
            raise DataError(
                f"{at}: field {self.label_field!r} holds a label that is not in the configured label space "
                f"({listing(self.space)}); check that dataset.label_field names the label field, fix the record, "
                f"or set dataset.label_space to include it"
            )
        return tuple(found)


def _unique_id(record: Mapping[str, Any], id_field: str, where: str, at: str, first_seen: dict[str, str]) -> str:
    """The record's id from `id_field`, refused when empty or used before (`first_seen`: id -> where): checked here,
    row by row, so the message can name both rows without quoting the (private) id."""
    raw_id = _field(record, id_field, "id_field", at)
    doc_id = "" if _missing(raw_id) else str(raw_id).strip()
    if not doc_id:
        raise DataError(f"{at}: field {id_field!r} (the id) is empty; give every record an id")
    if doc_id in first_seen:
        raise DataError(
            f"{at}: the id in field {id_field!r} was already used at {first_seen[doc_id]}; ids must be "
            f"unique (or set dataset.id_field=null to number the records)"
        )
    first_seen[doc_id] = where
    return doc_id


def records_to_corpus(
    rows: Iterable[Row],
    *,
    source: str,
    name: str,
    split: str,
    text_field: str,
    label_field: str,
    id_field: str | None,
    multi_label: bool,
    label_space: Sequence[str] | None,
    label_sep: str | None,
    label_names: Sequence[str] | None,
    label_map: Mapping[str, str],
    unlabelled_label: str | None,
    max_chars: int,
    label_from_scores: bool,
    html_entities: bool = False,
) -> Corpus:
    """Validate `rows` from `source` (a path or a description) into the corpus `<name>-<split>`.

    Labels may be a string (split on `label_sep` when given), an integer
    (mapped through `label_names`, the class names of a Hugging Face
    ClassLabel, when given) or a list; `label_map` then renames a label as the
    source writes it to its label-space name, and a record with no label
    gets `unlabelled_label` (refused when it is None). Ids come from `id_field`, else
    `<name>-<split>-<i>`. With `label_space=None` nothing is checked against a
    label space and the corpus gets its own sorted labels; see
    `infer_label_space` for sharing one across splits. A text longer than
    `max_chars` characters is refused before anything (a tokenizer) reads it.
    With `label_from_scores` the label field holds a mapping of class ->
    score and the label is the class with the largest score (ties: the first
    in the label space), then renamed by `label_map` like any label.
    Texts are kept as the source writes them (surrounding whitespace aside);
    `html_entities` decodes HTML character references (`&#039;` to an
    apostrophe), for a source known to carry them as escapes of a web page
    (the UCI drug reviews scraped from Drugs.com), never for clinical text.
    """
    space = [str(s) for s in label_space] if label_space is not None else None
    rule = _LabelRule(
        label_field=label_field,
        sep=label_sep,
        names=label_names,
        label_map=label_map,
        unlabelled=unlabelled_label,
        from_scores=label_from_scores,
        multi_label=multi_label,
        space=space,
        allowed=frozenset(space) if space is not None else None,
    )
    ids: list[str] = []
    texts: list[str] = []
    labels: list[tuple[str, ...]] = []
    first_seen: dict[str, str] = {}
    for i, (where, record) in enumerate(rows):
        at = f"{source} {where}"
        text = _text(_field(record, text_field, "text_field", at), text_field, at, max_chars, html_entities)
        found = rule.labels(record, at)
        doc_id = f"{name}-{split}-{i}" if id_field is None else _unique_id(record, id_field, where, at, first_seen)
        ids.append(doc_id)
        texts.append(text)
        labels.append(found)
    if not texts:
        raise DataError(f"{source} has no records; check that it is the right file or split")
    if space is None:
        space = sorted({label for ls in labels for label in ls})
    return Corpus.build(texts, labels, space, ids=ids, multi_label=multi_label, name=f"{name}-{split}")


def loader_rows_to_corpus(
    rows: Iterable[Row],
    *,
    source: str,
    name: str,
    split: str,
    multi_label: bool,
    label_space: Sequence[str] | None,
    label_map: Mapping[str, str],
    max_chars: int,
    html_entities: bool,
) -> Corpus:
    """`records_to_corpus` for rows a dataset's own reader built, `{"id", "text", "label"}` with the labels a list
    (or one label) as the source names them: no separator to split on, no class names, no scores, and no document
    left without a label (the reader gave it `unlabelled_label` or dropped it)."""
    return records_to_corpus(
        rows,
        source=source,
        name=name,
        split=split,
        text_field="text",
        label_field="label",
        id_field="id",
        multi_label=multi_label,
        label_space=label_space,
        label_sep=None,
        label_names=None,
        label_map=label_map,
        unlabelled_label=None,
        max_chars=max_chars,
        label_from_scores=False,
        html_entities=html_entities,
    )


# An inferred label space larger than this share of the documents, or with a label longer than this, is most
# likely document text read as labels (a mis-set label_field): refused unless allowed.
MAX_INFERRED_LABEL_SHARE = 0.1
MAX_INFERRED_LABEL_CHARS = 100


def infer_label_space(
    name: str, train: Corpus, eval: Corpus | None, origin: str = "the label field", allow: bool = False
) -> tuple[Corpus, Corpus | None]:
    """Give both splits the sorted union of their labels, for datasets whose config sets no label space.

    The label space then comes from the private data without noise; it is
    treated as public (as the paper does), with a warning, and results flag
    the job `label_space_inferred: true`. Set `dataset.label_space` to avoid it.
    A space that looks like document text (more labels than a tenth of the
    training documents, or a label over 100 characters) is refused unless
    `allow` (`dataset.allow_inferred_label_space=true`): releasing it would
    publish private text as label names. `origin` names where labels were read
    ("field 'label'") for the message, which never quotes a label.
    """
    corpora = [c for c in (train, eval) if c is not None]
    space = tuple(sorted({label for c in corpora for ls in c.labels for label in ls}))
    limit = int(len(train) * MAX_INFERRED_LABEL_SHARE)
    longest = max((len(label) for label in space), default=0)
    if not allow and (len(space) > limit or longest > MAX_INFERRED_LABEL_CHARS):
        why = (
            f"{len(space)} labels for {len(train)} training documents (at most N/10 = {limit} may be inferred)"
            if len(space) > limit
            else f"a label of {longest} characters (at most {MAX_INFERRED_LABEL_CHARS})"
        )
        raise DataError(
            f"dataset '{name}': the label space inferred from {origin} has {why}, so it may be document text; "
            f"check that dataset.label_field names the label field and set dataset.label_space to the task's labels, "
            f"or set dataset.allow_inferred_label_space=true to release the inferred labels as public"
        )
    log.warning(
        "dataset '%s': label_space not set; inferred %d labels from the %s labels (sorted); the label space is "
        "treated as public, which is not DP for the private labels: set dataset.label_space to the task's labels",
        name,
        len(space),
        "train and eval" if eval is not None else "train",
    )
    return replace(train, label_space=space), (replace(eval, label_space=space) if eval is not None else None)
