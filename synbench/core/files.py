"""How a job writes files: atomically (temp file then rename), private to the user, JSON-safe.

A leaf of the core: every writer (results, caches, arrays, synthetic corpora)
goes through `atomic_path`, so a reader or a resumed job never sees half a
file, and whatever a job writes (it may hold statistics of private data) is
0600 in 0700 folders.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

import numpy as np

if TYPE_CHECKING:
    from synbench.core.corpus import Corpus


def to_json(value: Any) -> Any:
    """JSON-safe copy: non-finite floats become the strings 'inf', '-inf', 'nan' (strict JSON has none)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return to_json(value.item())
    return value


FILE_MODE = 0o600  # what a job writes may hold statistics of private data: readable by its user only
FOLDER_MODE = 0o700


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` for a writer to fill; renamed onto `path` when the block ends, removed if it
    fails.

    The one way every file of a job is written (text, JSON, numpy arrays, index
    files): a reader, or a resumed job, never sees half a file, and the file
    (0600) and a folder made for it (0700) are private to the user. The
    temporary name ends like `path`, so writers that add a suffix (np.save,
    np.savez) keep it.
    """
    path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def atomic_folder(folder: Path, keep: Callable[[Path], bool] | None = None) -> Iterator[Path]:
    """A temporary folder beside `folder` for a writer to fill; it replaces `folder` (an older, incomplete one
    included) when the block ends and is removed if it fails, so a folder that exists is complete.

    `keep`: a test of the folder found in place when the block ends; if it passes (a complete copy another
    process published meanwhile, say), that folder stays and the new one is dropped.
    """
    folder.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        yield partial
        if folder.exists():
            if keep is not None and keep(folder):
                return
            shutil.rmtree(folder)
        os.replace(partial, folder)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` (UTF-8) atomically: a reader never sees half a file."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def save_arrays_atomic(path: Path, **arrays: np.ndarray) -> None:
    """`np.savez` atomically (`np.save` of the one array when `path` ends in .npy)."""
    with atomic_path(path) as tmp:
        if path.suffix == ".npy":
            [array] = arrays.values()
            np.save(tmp, array)
        else:
            np.savez(tmp, **arrays)


def write_json_atomic(path: Path, payload: Mapping[str, Any]) -> None:
    write_text_atomic(path, json.dumps(to_json(payload), indent=2) + "\n")


def write_corpus_jsonl(path: Path, corpus: Corpus) -> None:
    """A corpus as JSONL in the authors' format (`text`, `label` list), plus `id`; `dataset=` can read it back."""
    lines = (
        json.dumps({"id": i, "text": t, "label": list(ls)}, ensure_ascii=False)
        for i, t, ls in zip(corpus.ids, corpus.texts, corpus.labels)
    )
    write_text_atomic(path, "".join(line + "\n" for line in lines))
