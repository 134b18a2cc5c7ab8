"""Keys that say nothing about the private data: an HMAC under a per-user secret kept outside every job folder.

A job that resumes (DP-Gen reusing its trained weights) must know that the
saved state came from the same job on the same private data. A plain hash of
the data answers that, and also answers a membership question for anyone who
holds the job folder and a candidate dataset: hash the candidate, compare.
Keyed with a random secret that never enters a job folder, the key is a
pseudorandom function of (job, data): equal for the same job and data, and
without the secret it cannot be recomputed or tested against a guess. Cache
file names (embeddings of private text), prepared files' digests and the
contamination indexes are keyed the same way, so the helper sits in the core,
below every layer that keys something (`synbench.job.resume` for resumable work).

The secret is 32 random bytes in `~/.cache/synbench/resume.key` (or the file
`SYNBENCH_SECRET_FILE` names), created on first use with mode 0600 in a 0700
folder. Deleting it only costs re-training: every saved key stops matching.
On another machine, or for another user, keys differ, so a copied job folder
re-trains rather than trusting state it cannot check.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from synbench.core.errors import ConfigError
from synbench.core.files import to_json

SECRET_ENV = "SYNBENCH_SECRET_FILE"
SECRET_BYTES = 32


def secret_path() -> Path:
    """Where the per-user secret lives: `$SYNBENCH_SECRET_FILE`, else `~/.cache/synbench/resume.key`."""
    configured = os.environ.get(SECRET_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "synbench" / "resume.key"


def secret() -> bytes:
    """The per-user secret, made on first use (0600; two jobs starting together agree on one)."""
    return _secret(secret_path())


@lru_cache(maxsize=4)
def _secret(path: Path) -> bytes:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.exists():
        _publish_once(path, secrets.token_bytes(SECRET_BYTES))
    value = path.read_bytes()
    if len(value) != SECRET_BYTES:  # a half-written file from a crash, or one another program wrote
        raise ConfigError(
            f"the resume secret {path} is not {SECRET_BYTES} bytes; delete it (jobs then re-train "
            f"instead of resuming) or point {SECRET_ENV} at another file"
        )
    return value


def _publish_once(path: Path, value: bytes) -> None:
    """Put `value` at `path` unless a file is there already, never showing a reader a partial file.

    Written whole to a private temporary file first, then hard-linked to
    `path`: the link appears with all its bytes, and fails when another job
    linked first, whose secret then stands for both. (An exclusive create
    followed by a write let the second of two jobs starting together read the
    empty file in between: a demo-grid job failed so.)
    """
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(value)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(temporary)


def keyed_hash(description: Mapping[str, Any], texts: Iterable[str]) -> str:
    """An HMAC of a JSON description and a sequence of texts under the per-user secret (hex, 128 bits)."""
    mac = hmac.new(secret(), json.dumps(to_json(description), sort_keys=True).encode(), hashlib.sha256)
    for text in texts:
        mac.update(hashlib.sha256(text.encode()).digest())
    return mac.hexdigest()[:32]
