"""`files`: a dataset from local JSONL, CSV, TSV or Parquet files.

This is how DUA and credentialed corpora (MIMIC, n2c2, AsyLex) come in: the
user obtains them under their agreement and points `dataset.train` at the
file. The readers only turn each format into `(where, record)` rows with
exact line numbers; all validation is in `synbench.data.records`.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError, DataError
from synbench.data.common import FieldDataset, SourceSplits
from synbench.data.prepared import check_prepared
from synbench.data.records import Row

FORMATS = ("jsonl", "csv", "tsv", "parquet")
SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
DEFAULT_CSV_LABEL_SEP = "|"
# Clinical notes can exceed the csv module's default 128 KiB field limit.
csv.field_size_limit(2**31 - 1)


def _binary(path: Path, key: str | None) -> BinaryIO:
    """The file opened for reading bytes; with `key`, the config key that names it, gunzipped as it is read when
    its name ends .gz (as PhysioNet ships MIMIC-III)."""
    return gzip.open(path, "rb") if key is not None and path.name.lower().endswith(".gz") else path.open("rb")


@contextmanager
def _gzip_errors(path: Path, key: str | None) -> Iterator[None]:
    """Refuse, naming `key`, a file named .gz that is not gzip or is damaged (found as it is read)."""
    try:
        yield
    except gzip.BadGzipFile:
        raise DataError(
            f"{path} is not gzip-compressed though its name ends .gz; rename it without .gz and set dataset.{key} "
            "to the new name"
        ) from None
    except (EOFError, zlib.error):
        raise DataError(
            f"{path} is a damaged or incomplete gzip file; download it again (dataset.{key} names it)"
        ) from None


def _lines(path: Path, shown: str | Path, key: str | None = None) -> Iterator[str]:
    """The file's lines as text (endings kept), each decoded on its own so a non-UTF-8 byte is named by its line
    (`key`: see `_binary`)."""
    with _binary(path, key) as f, _gzip_errors(path, key):
        for lineno, raw in enumerate(f, 1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(
                    f"{shown} line {lineno}: byte {exc.start + 1} of the line is not UTF-8; save the file as UTF-8"
                ) from None


def jsonl_rows(path: Path, shown: str | None = None) -> Iterator[Row]:
    """The JSON objects of a JSONL file with their line numbers; messages name the file as `shown` (default: its
    path) and never quote a line."""
    name = shown or path
    for lineno, line in enumerate(_lines(path, name), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"{name} line {lineno}: not valid JSON ({exc.msg} at column {exc.colno}); fix the line"
            ) from None
        if not isinstance(record, dict):
            raise DataError(
                f"{name} line {lineno}: expected a JSON object with named fields, got a {type(record).__name__}"
            )
        yield f"line {lineno}", record


FIX_LINE = "fix the line (quote a text that contains the delimiter)"


def delimited_rows(
    path: Path,
    delimiter: str,
    *,
    key: str,
    fix: str = FIX_LINE,
    check_header: Callable[[list[str]], None] | None = None,
) -> Iterator[Row]:
    """Rows of a CSV/TSV file with a header line (gzipped when its name ends .gz); `line N` is the line where the
    record starts.

    A row whose field count differs from the header's is refused naming its
    line, never read: an unquoted delimiter in a text shifts every field after
    it, so the text would be read from the wrong column. `fix` says what to do
    about such a line (`key`, the file's config key, is named when the file is
    empty or not what its name says); `check_header` sees the header line
    before any row is read. Blank lines are skipped.
    """
    kind = "TSV" if delimiter == "\t" else "CSV"
    with _binary(path, key) as raw, _gzip_errors(path, key):
        # decoded as a stream, a leading byte-order mark dropped (a line-by-line decode would double the read time
        # of MIMIC-III's 4 GB of notes)
        reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8-sig", newline=""), delimiter=delimiter)
        try:
            header = next(reader, [])
            if not header:
                raise DataError(f"{path} is empty (no header line); check that dataset.{key} names the right file")
            if check_header is not None:
                check_header(header)
            start = reader.line_num + 1
            for values in reader:
                if any(v.strip() for v in values):
                    if len(values) != len(header):
                        raise DataError(
                            f"{path} line {start}: {len(values)} {kind} fields but the header has {len(header)}; {fix}"
                        )
                    yield f"line {start}", dict(zip(header, values, strict=True))
                start = reader.line_num + 1
        except csv.Error as exc:
            raise DataError(f"{path} line {reader.line_num}: not valid {kind} ({exc}); {fix}") from None
        except UnicodeDecodeError:
            for _ in _lines(path, path, key):  # read again line by line: raises naming the first line not UTF-8
                pass
            raise DataError(f"{path} is not UTF-8 text; save the file as UTF-8") from None


def _parquet(path: Path) -> Iterator[Row]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except pa.ArrowException as exc:
        raise DataError(f"{path} is not a readable Parquet file ({exc}); check dataset.format") from None
    for i, record in enumerate(table.to_pylist()):
        yield f"row {i}", record


@dataclass(kw_only=True)
class FileDataset(FieldDataset):
    """Local files: `train` (required) and optional `eval` (else `eval_fraction` of train is held out).

    `format: auto` picks the reader from the file suffix. In CSV/TSV a
    multi-label cell is split on `label_sep` (default "|").
    """

    train: str | None = None  # the training file (required)
    eval: str | None = None  # null: eval_fraction of train is held out
    format: str = "auto"  # auto (from the suffix) | jsonl | csv | tsv | parquet

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.format not in ("auto", *FORMATS):
            raise ConfigError(f"dataset.format={self.format!r} is not one of: auto, {', '.join(FORMATS)}")

    def _read(self) -> SourceSplits:
        self.check_source()
        assert self.train is not None  # check_source refuses an unset train file
        train = self._file_corpus(self.train, "train")
        return SourceSplits(train, self._file_corpus(self.eval, "eval") if self.eval is not None else None)

    def check_source(self) -> None:
        """The train file is set, and it (and the eval file, when set) is a file that exists."""
        if self.train is None:
            raise ConfigError(
                f"dataset '{self.name}' needs its training file: pass dataset.train=/path/to/train.jsonl "
                f"(and optionally dataset.eval=/path/to/eval.jsonl).{self.where_to_get()}"
            )
        for split, file in (("train", self.train), ("eval", self.eval)):
            if file is not None:
                self._format(self._existing(file, split))

    def _existing(self, file: str, split: str) -> Path:
        """The path of the `split` file, refused when it is a folder or does not exist."""
        path = Path(file).expanduser()
        if path.is_dir():
            raise DataError(
                f"dataset '{self.name}': {split} file '{path}' is a directory; set dataset.{split}=<a file in it> "
                f"(JSONL, CSV, TSV or Parquet)"
            )
        if not path.is_file():
            raise DataError(
                f"dataset '{self.name}': {split} file '{path}' does not exist; "
                f"set dataset.{split}=/path/to/{split}.jsonl.{self.where_to_get()}"
            )
        return path

    def _file_corpus(self, file: str, split: str) -> Corpus:
        path = self._existing(file, split)
        check_prepared(path)  # a file task=prepare wrote must still be what it wrote
        fmt = self._format(path)
        if fmt == "jsonl":
            rows = jsonl_rows(path)
        elif fmt == "parquet":
            rows = _parquet(path)
        else:
            rows = delimited_rows(path, "," if fmt == "csv" else "\t", key=split)
        sep = DEFAULT_CSV_LABEL_SEP if fmt in ("csv", "tsv") and self.multi_label else None
        return self._corpus(rows, str(path), split, label_sep=self.label_sep or sep)

    def _format(self, path: Path) -> str:
        if self.format != "auto":
            return self.format
        fmt = SUFFIXES.get(path.suffix.lower())
        if fmt is None:
            raise ConfigError(
                f"cannot tell the format of '{path}' from its suffix; "
                f"set dataset.format to one of: {', '.join(FORMATS)}"
            )
        return fmt
