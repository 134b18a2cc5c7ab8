"""Per-document randomness inside a DP-SGD loss: each document's draws from the job's secret noise, on their own.

Some losses draw random numbers per example: DP-Diffusion's masks and noise
level t. The DP-SGD bound (clipping to C, then Gaussian noise) holds when the
loss of one document depends on that document alone, so these draws must
not move when another document is added or removed. A generator seeded from
the public `seed` and drawn in batch order breaks this twice: a document's
presence shifts every later document's draws (the neighbour's per-sample
gradients differ in many rows, not one), and an attacker who knows the seed
knows every draw.

Here a document's k-th draw comes from its own generator, seeded by a keyed
hash (BLAKE2b, a pseudorandom function) of (document key, k) under a
256-bit key taken from the job's secret `NoiseSource` stream. The document
key is a hash of the document's id (ids survive `Corpus.subset`, so a
neighbour keeps every other document's key), never written anywhere. Poisson
sampling draws a document at most once per logical step, so k counts the
steps that have drawn it: its draws depend on nothing but its own history.
With the key secret, the draws are independent and uniform whatever the
data; with `privacy.noise_seed` they replicate.
"""

from __future__ import annotations

import hashlib

import torch

from synbench.core.privacy import NoiseSource

KEY_BYTES = 32
_MASK63 = (1 << 63) - 1


def document_key(doc_id: str) -> int:
    """A 63-bit key of a document id (kept in memory only): the name of the document's own random stream."""
    return int.from_bytes(hashlib.blake2b(doc_id.encode(), digest_size=8).digest(), "little") & _MASK63


class DocumentNoise:
    """Independent random generators per (document, draw), keyed by the job's secret noise source."""

    def __init__(self, noise: NoiseSource, stream: str) -> None:
        self._key = noise.numpy(stream).bytes(KEY_BYTES)
        self._draws: dict[int, int] = {}

    def seed(self, doc: int, draw: int) -> int:
        """The seed of draw `draw` of document `doc`: a keyed hash, unpredictable without the secret key."""
        digest = hashlib.blake2b(f"{doc}/{draw}".encode(), key=self._key, digest_size=8).digest()
        return int.from_bytes(digest, "little") & _MASK63

    def next(self, doc: int) -> torch.Generator:
        """A torch generator for the next draw of document `doc` (its first, second, ... use in training)."""
        draw = self._draws.get(doc, 0)
        self._draws[doc] = draw + 1
        return torch.Generator().manual_seed(self.seed(doc, draw))
