"""An infini-gram index (suffix array over token ids) built locally, or an existing one opened.

Building follows the `infini-gram` package's own pipeline, with the public
model's tokenizer instead of a hub download: step 1 writes the token file
(`tokenized.0`: each document as a separator 0xFF..FF and its ids, little
endian) and its document offsets (`offset.0`); step 2 runs the package's
`rust_indexing` binary (make-part, merge, concat) into the suffix array
`table.0`. Each step writes to a temporary name and renames, and is skipped
when its output exists, so a killed build resumes; `index.json` is written
last and marks a finished index. The folder is keyed by the tokenizer and
an HMAC of the texts (`synbench.job.resume`) under the job's cache dir, so a second job reuses it.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from synbench.core.errors import ConfigError, SynBenchError
from synbench.core.files import atomic_path, write_json_atomic
from synbench.core.keyed import keyed_hash

log = logging.getLogger(__name__)
DONE_FILE = "index.json"
DTYPES = {"u16": np.uint16, "u32": np.uint32}


@dataclass(frozen=True)
class IndexInfo:
    """Where an index is and what it holds (public: it describes the public corpus)."""

    path: Path
    token_dtype: str
    n_docs: int
    n_tokens: int
    build_s: float


def token_dtype_for(vocab_size: int) -> str:
    """u16 while every id fits below the separator 0xFFFF, else u32."""
    return "u16" if vocab_size < 2**16 - 1 else "u32"


def corpus_key(docs: Sequence[str], tokenizer_name: str) -> str:
    """The index folder's name: an HMAC of the tokenizer and the texts (`synbench.job.resume`), no digest of the
    texts."""
    return keyed_hash({"tokenizer": tokenizer_name}, docs)


def _binary() -> Path:
    import infini_gram

    path = Path(infini_gram.__file__).parent / "rust_indexing"
    if not path.is_file():
        raise SynBenchError(f"the infini-gram package has no rust_indexing binary at {path}; reinstall `infini-gram`")
    return path


def _tokenize(folder: Path, docs: Sequence[str], tokenizer: Any, dtype: str) -> int:
    """Step 1: `tokenized.0` and `offset.0`; returns the token count (separators included)."""
    width = np.dtype(DTYPES[dtype]).itemsize
    sep = np.array([np.iinfo(DTYPES[dtype]).max], dtype=DTYPES[dtype])
    parts, offsets, at = [], [], 0
    for start in range(0, len(docs), 1024):
        for ids in tokenizer(list(docs[start : start + 1024]), add_special_tokens=False)["input_ids"]:
            row = np.concatenate([sep, np.asarray(ids, dtype=DTYPES[dtype])])
            offsets.append(at)
            at += row.size * width
            parts.append(row.tobytes())
    for name, payload in (
        ("offset.0", np.asarray(offsets, dtype=np.uint64).tobytes()),
        ("tokenized.0", b"".join(parts)),
    ):
        with atomic_path(folder / name) as tmp:
            tmp.write_bytes(payload)
    return at // width


def _suffix_array(folder: Path, dtype: str, threads: int) -> None:
    """Step 2: the package's rust_indexing make-part / merge / concat, one part (small corpora, one machine)."""
    data = folder / "tokenized.0"
    size, width = data.stat().st_size, np.dtype(DTYPES[dtype]).itemsize
    ratio = int(math.ceil(math.log2(max(size, 2)) / 8))
    parts, merged = folder / "parts", folder / "merged"
    for scratch in (parts, merged):
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
    common = ["--data-file", str(data), "--ratio", str(ratio), "--token-width", str(width)]
    with atomic_path(folder / "table.0") as table:
        steps = [
            ["make-part", "--parts-dir", str(parts), "--start-byte", "0", "--end-byte", str(size)],
            [
                "merge",
                "--parts-dir",
                str(parts),
                "--merged-dir",
                str(merged),
                "--num-threads",
                str(threads),
                "--hacksize",
                "100000",
            ],
            ["concat", "--merged-dir", str(merged), "--merged-file", str(table), "--num-threads", str(threads)],
        ]
        for step in steps:
            proc = subprocess.run([str(_binary()), *step, *common], capture_output=True, text=True)
            if proc.returncode != 0:
                raise SynBenchError(
                    f"infini-gram indexing step '{step[0]}' failed (exit {proc.returncode}): "
                    f"{proc.stderr.strip()[-300:]}"
                )
    shutil.rmtree(parts, ignore_errors=True)
    shutil.rmtree(merged, ignore_errors=True)


def build_index(folder: Path, docs: Sequence[str], tokenizer: Any, threads: int = 1) -> IndexInfo:
    """The index of `docs` in `folder`: reused when finished, resumed step by step when a build was interrupted."""
    done = folder / DONE_FILE
    if done.is_file():
        return open_index(folder, None)
    if not docs:
        raise ConfigError("the exact-match corpus has no documents; check contamination.exact.files")
    folder.mkdir(parents=True, exist_ok=True)
    dtype = token_dtype_for(len(tokenizer))
    start = time.perf_counter()
    if not (folder / "tokenized.0").is_file() or not (folder / "offset.0").is_file():
        log.info("infini-gram index: tokenizing %d public documents into %s", len(docs), folder)
        _tokenize(folder, docs, tokenizer, dtype)
    if not (folder / "table.0").is_file():
        log.info("infini-gram index: building the suffix array")
        _suffix_array(folder, dtype, threads)
    n_tokens = (folder / "tokenized.0").stat().st_size // np.dtype(DTYPES[dtype]).itemsize - len(docs)
    write_json_atomic(
        done,
        {
            "token_dtype": dtype,
            "n_docs": len(docs),
            "n_tokens": n_tokens,
            "build_s": round(time.perf_counter() - start, 3),
        },
    )
    return open_index(folder, dtype)


def open_index(folder: Path, token_dtype: str | None) -> IndexInfo:
    """A finished index: ours (with `index.json`) or any infini-gram v4 index folder (token dtype given, else
    index.json's, else u16)."""
    if not folder.is_dir() or not any(folder.glob("table.*")):
        raise ConfigError(
            f"contamination.exact.index_dir={str(folder)!r} is not an infini-gram index "
            "(no table.* files); build one or point at the folder holding tokenized.*, table.*, offset.*"
        )
    meta = json.loads((folder / DONE_FILE).read_text()) if (folder / DONE_FILE).is_file() else {}
    dtype = token_dtype or meta.get("token_dtype", "u16")
    return IndexInfo(
        folder, dtype, int(meta.get("n_docs", -1)), int(meta.get("n_tokens", -1)), float(meta.get("build_s", 0.0))
    )
