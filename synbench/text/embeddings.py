"""Sentence embeddings of corpora, computed once per (encoder, corpus) and cached.

Metrics (MAUVE features) and the audit (outlier targets) embed the same
corpora; `EmbeddingCache` makes that one batched encoder pass per corpus per
job, kept in memory and as `.npy` files under the cache folder (under the
output root, 0700), keyed by an HMAC (`synbench.core.keyed.keyed_hash`) of every
encoder setting and the texts: a file name is no digest of private text, and
an encoder setting that changes the vectors changes the key. Embeddings of
private text are never logged.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from synbench.core.base import EncoderSpec
from synbench.core.errors import ConfigError
from synbench.core.files import save_arrays_atomic
from synbench.core.keyed import keyed_hash
from synbench.core.progress import quiet_loading

log = logging.getLogger(__name__)


def model_source(package: str | None, pretrained: str) -> str:
    """The folder an offline pip package (with `get_model_path()`) ships, else `pretrained` (hub id or folder)."""
    if package:
        try:
            return str(importlib.import_module(package).get_model_path())
        except ImportError:
            log.info("offline package %s not installed; loading %s by name", package, pretrained)
    return pretrained


@lru_cache(maxsize=2)
def load_encoder(spec: EncoderSpec) -> Any:
    from sentence_transformers import SentenceTransformer

    source = model_source(spec.package, spec.pretrained)
    try:
        with quiet_loading("sentence_transformers"):
            model = SentenceTransformer(source, device="cuda" if _cuda() else "cpu")
    except OSError as exc:
        raise ConfigError(
            f"encoder '{spec.name}': could not load '{source}' ({exc}); install it or pick encoder=minilm (offline)"
        ) from None
    model.max_seq_length = spec.max_seq_length
    return model


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


class EmbeddingCache:
    """Embeds corpora with one encoder; each distinct list of texts is encoded once."""

    def __init__(self, spec: EncoderSpec, folder: Path | None = None) -> None:
        self.spec = spec
        self.folder = folder
        self._memory: dict[str, np.ndarray] = {}

    def key(self, texts: Sequence[str]) -> str:
        """The cache key of `texts` under this encoder: every `EncoderSpec` field, keyed by the per-user secret."""
        return keyed_hash({"encoder": asdict(self.spec)}, texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32 embeddings, L2-normalised when the spec says so."""
        key = self.key(texts)
        if key in self._memory:
            return self._memory[key]
        path = self.folder / f"{key}.npy" if self.folder else None
        if path is not None and path.exists():
            vectors = np.load(path)
        else:
            model = load_encoder(self.spec)
            vectors = model.encode(
                list(texts),
                batch_size=self.spec.batch_size,
                normalize_embeddings=self.spec.normalize,
                convert_to_numpy=True,
                show_progress_bar=len(texts) > 256,
            ).astype(np.float32)
            if path is not None:
                save_arrays_atomic(path, embeddings=vectors)
        self._memory[key] = vectors
        return vectors
