"""Files `task=prepare` wrote, checked against their manifest when they are read back.

`task=prepare` (synbench.tasks.prepare) writes a dataset's splits as JSONL
with a `manifest.json` beside them that lists each file it wrote: its split
(whose document count the manifest holds) and a digest of its bytes. Reading
such a file back (the `files` loader's `dataset.train` / `dataset.eval`, a
release dataset pointed at its prepared files) first checks both, so a
prepared file edited, truncated or half-copied afterwards is refused rather
than trained and scored on. A file no manifest lists (a user's own JSONL, or
one beside a manifest of another tool) is read as it is.

The digest is an HMAC under the per-user secret (`synbench.job.resume`), not
a plain hash: a plain hash of the file would let anyone holding the manifest
test a guessed copy of the private data against it. Keyed, it says nothing
without the secret. The manifest also records which secret keyed it (an HMAC
of no data), so files prepared by another user or on another machine are told
apart from edited ones: their digest cannot be checked there (a warning
says so), their document counts still are.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Iterator

from synbench.core.errors import DataError
from synbench.core.keyed import SECRET_ENV, keyed_hash

log = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"  # beside the prepared files
# what the HMACs below are computed for (part of the keyed message, so they match no other keyed hash)
FILE_DIGEST = {"purpose": "the bytes of a file task=prepare wrote"}
SECRET_ID = {"purpose": "which secret keyed the digests of prepared files"}


def read_manifest(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`; None when there is no such file or it holds something else (not a manifest
    `task=prepare` wrote)."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return manifest if isinstance(manifest, dict) else None


def scan(path: Path) -> tuple[int, str]:
    """The file's records (its lines that are not blank: the JSONL reader skips blank lines) and a keyed HMAC of
    its exact bytes (each line decoded as Latin-1, one character per byte), in one pass."""
    records = 0

    def lines() -> Iterator[str]:
        nonlocal records
        with path.open("rb") as f:
            for line in f:
                records += bool(line.strip())
                yield line.decode("latin-1")

    digest = keyed_hash(FILE_DIGEST, lines())
    return records, digest


def secret_id() -> str:
    """Which per-user secret keys the digests: an HMAC of no data, equal wherever the same secret is used."""
    return keyed_hash(SECRET_ID, ())


def listed_files(folder: Path, split_files: dict[str, str]) -> dict[str, dict[str, str]]:
    """The manifest's `files` table for the prepared `split_files` (split -> file name) in `folder`: each file's
    split and digest."""
    return {file: {"split": split, "digest": scan(folder / file)[1]} for split, file in split_files.items()}


def check_prepared(path: Path) -> None:
    """Refuse `path` when the manifest beside it lists it and the file no longer matches: another number of
    documents than its split had, or (under the same secret) other bytes. A file no manifest lists passes."""
    manifest_path = path.parent / MANIFEST_FILE
    manifest = read_manifest(manifest_path)
    files = manifest.get("files") if manifest is not None else None
    entry = files.get(path.name) if isinstance(files, dict) else None
    if manifest is None or not isinstance(entry, dict):
        return
    fix = (
        f"run task=prepare for dataset '{manifest.get('dataset')}' again to rewrite it (or delete {manifest_path} "
        "to read the edited file unchecked)"
    )
    split = (manifest.get("splits") or {}).get(entry.get("split")) or {}
    records, digest = scan(path)
    if records != split.get("documents"):
        raise DataError(
            f"{path} does not hold the number of documents {manifest_path} lists for its split: it changed after "
            f"task=prepare wrote it; {fix}"
        )
    if manifest.get("secret_id") != secret_id():
        log.warning(
            "%s was prepared under another user's or machine's secret, so its digest cannot be checked here (its "
            "document count was); point %s at that secret file to check it",
            path,
            SECRET_ENV,
        )
    elif entry.get("digest") != digest:
        raise DataError(f"{path} differs from the file task=prepare wrote (its digest in {manifest_path}); {fix}")
