"""Public text the detectors read: the embedded default corpus, and user files of documents.

The embedded default corpus of the exact-match index is the Python
documentation's pydoc topics (`pydoc_data.topics`, about 465 KB of English
text in 79 topics, split into paragraphs), which ships inside every CPython
installation under the PSF License 2.0, so it can be indexed anywhere with no
download. It is a stand-in that shows the mechanics; it is not the
pretraining data of any model (see docs/contamination.md, "Exact n-gram exposure", for pointing the
detector at a real pretraining index).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from synbench.core.errors import DataError

PYTHON_DOCS = "python_docs"


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, whitespace-normalised; empty ones dropped."""
    return [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]


def python_docs() -> list[str]:
    """The embedded default corpus: every pydoc topic of this Python, as paragraphs, in topic order."""
    from pydoc_data.topics import topics

    return [p for name in sorted(topics) for p in paragraphs(topics[name])]


def read_documents(paths: Sequence[str]) -> list[str]:
    """Documents of JSONL files (one {"text": ...} per line) or plain-text files (one per blank-line paragraph)."""
    docs: list[str] = []
    for name in paths:
        path = Path(name)
        if not path.is_file():
            raise DataError(
                f'document file {name!r} does not exist; give JSONL ({{"text": ...}} per line) or text files'
            )
        if path.suffix == ".jsonl":
            for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    text = json.loads(line)["text"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    raise DataError(f'{name}, line {line_no}: expected a JSON object with a "text" field') from None
                docs.append(str(text))
        else:
            docs += paragraphs(path.read_text(encoding="utf-8"))
    return docs
