"""What names one release of a hub repository: the words a dataset's loader and the job's summary share (the
summary reads results.json only, so it cannot ask the loader)."""

from __future__ import annotations

import re

COMMIT_SHA = re.compile(r"[0-9a-f]{40}")  # a full commit id of a hub repository: the one revision no push can move


def pinned(revision: str | None) -> bool:
    """Whether `revision` names one commit (a full sha) rather than a branch or tag a later push can move."""
    return revision is not None and COMMIT_SHA.fullmatch(revision) is not None


def names_folder(path: str) -> bool:
    """Whether a `dataset.path` is written as a folder on disk (absolute, relative or under ~), not a hub id."""
    return path.startswith(("/", ".", "~"))
