"""The audit design: which documents go into each private set and each reference corpus.

Everything is a position in the dataset's training split and is drawn from
the job's seed, so a design is reproducible and can be saved as plain arrays
(`audit_design.npz` in the job directory) without any document text.

- The non-target documents are split 1:2 into D_prv (private base) and D_aux
  (the attacker's auxiliary data).
- `k_subsets`: K = 2P private sets in P pairs. The two sets of a pair share
  one base (a random `base_fraction` of D_prv, our choice) and split the
  targets between them by a fair coin per target: each target is in exactly
  one set of every pair. So every target is in exactly half the sets, and
  for every target each pair is "the same set with and without it" (the
  paper's pairs), for all targets at once rather than one pair per target.
- `one_run`: one private set, all of D_prv plus each target independently
  with probability 1/2 (Steinke, Nasr & Jagielski 2023).
- Canaries (optional): `n_canaries` extra targets that are not documents of
  the split but positions after it, `canary_repeats` consecutive positions
  per canary (its copies; the task appends their texts, see
  synbench.audit.canaries). They enter private sets exactly like the outlier
  targets, with all their copies; a reference corpus holds one copy.
- M reference corpora, each a random `ref_fraction` of D_aux (our choice; with
  the default 1/2 it is about as large as D_prv); for each target exactly
  M/2 references include it, so the reference mean sees it half the time.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from synbench.audit.config import AuditOptions
from synbench.core.errors import ConfigError
from synbench.core.files import save_arrays_atomic


@dataclass(frozen=True)
class AuditDesign:
    """Positions in the training split and the membership matrices of one audit."""

    targets: np.ndarray  # (T,) the targets: outliers (positions in the split), then canaries (first copy's position)
    private: np.ndarray  # (P,) D_prv
    aux: np.ndarray  # (A,) D_aux
    inclusion: np.ndarray  # (K, T) bool: target t is in private set k
    base: np.ndarray  # (K, P) bool: D_prv document p is in private set k
    ref_inclusion: np.ndarray  # (M, T) bool: target t is in reference corpus m
    ref_base: np.ndarray  # (M, A) bool: D_aux document a is in reference corpus m
    kinds: np.ndarray  # (T,) int8: 0 outlier, 1 canary
    copies: np.ndarray  # (T,) copies of each target in a private set that holds it (1 for outliers)

    def private_set(self, k: int) -> np.ndarray:
        """Sorted positions of private set k (targets mixed in by position, not appended; every copy of a canary)."""
        held = self.inclusion[k]
        copies = np.repeat(self.targets[held], self.copies[held]) + _copy_offsets(self.copies[held])
        return np.sort(np.concatenate([self.private[self.base[k]], copies]))

    def reference_set(self, m: int) -> np.ndarray:
        """Sorted positions of reference corpus m."""
        return np.sort(np.concatenate([self.aux[self.ref_base[m]], self.targets[self.ref_inclusion[m]]]))

    def planned_private_size(self) -> int:
        """The size of a private set fixed before membership is drawn: its shared base plus half the targets.

        The audit's delta and its synthetic corpus size come from this number,
        not from each run's actual set, whose size reveals how many targets it holds.
        """
        return int(self.base[0].sum()) + int(self.copies.sum()) // 2

    def digest(self) -> str:
        """A hash of every array: a saved run is reused only if it was made under this same design."""
        h = hashlib.sha256()
        for f in fields(self):
            h.update(np.ascontiguousarray(getattr(self, f.name)).tobytes())
        return h.hexdigest()[:16]

    def save(self, path: Path) -> None:
        save_arrays_atomic(path, **{f.name: getattr(self, f.name) for f in fields(self)})


def _copy_offsets(copies: np.ndarray) -> np.ndarray:
    """0, 1, ..., c - 1 for each count c in `copies`, concatenated."""
    ends = np.cumsum(copies)
    return np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(ends - copies, copies)


def _random_rows(rng: np.random.Generator, rows: int, cols: int, fraction: float) -> np.ndarray:
    """(rows, cols) bool, each row exactly round(fraction * cols) True at random places."""
    keep = round(fraction * cols)
    return np.argsort(rng.random((rows, cols)), axis=1) < keep


def make_design(n_docs: int, targets: np.ndarray, audit: AuditOptions, *, seed: int) -> AuditDesign:
    """Draw the design for a training split of `n_docs` documents with the given outlier targets and the canaries
    `audit` asks for (`audit.canaries`): its mode, pairs, references and fractions are read from the config, where
    their defaults are, so a design drawn here is the one the config describes.

    Canary c occupies positions n_docs + c * audit.canary_repeats onwards, after the split.
    """
    mode, n_subsets, n_references = audit.mode, audit.n_subsets, audit.n_references
    n_canaries, canary_repeats = audit.canaries, audit.canary_repeats
    if mode == "k_subsets" and (n_subsets < 2 or n_subsets % 2):
        raise ConfigError(f"audit.n_subsets={n_subsets} must be even and at least 2: private sets come in pairs")
    if n_references < 2 or n_references % 2:
        raise ConfigError(
            f"audit.n_references={n_references} must be even and at least 2: half of them hold each target"
        )
    for key in ("base_fraction", "ref_fraction"):
        if not 0 < getattr(audit, key) <= 1:
            raise ConfigError(f"audit.{key}={getattr(audit, key)} must lie in (0, 1]")
    rng = np.random.default_rng([seed, 0xA0D17])
    outliers = np.sort(np.asarray(targets, dtype=np.int64))
    rest = rng.permutation(np.setdiff1d(np.arange(n_docs), outliers))
    targets = np.concatenate([outliers, n_docs + canary_repeats * np.arange(n_canaries, dtype=np.int64)])
    kinds = np.repeat(np.array([0, 1], dtype=np.int8), [len(outliers), n_canaries])
    copies = np.where(kinds == 1, canary_repeats, 1).astype(np.int64)
    n_private = round(len(rest) / 3)
    private, aux = np.sort(rest[:n_private]), np.sort(rest[n_private:])
    n_targets = len(targets)
    if mode == "k_subsets":
        pairs = n_subsets // 2
        coin = rng.random((pairs, n_targets)) < 0.5
        inclusion = np.empty((n_subsets, n_targets), dtype=bool)
        inclusion[0::2], inclusion[1::2] = coin, ~coin
        base = np.repeat(_random_rows(rng, pairs, len(private), audit.base_fraction), 2, axis=0)
    else:
        inclusion = rng.random((1, n_targets)) < 0.5
        base = np.ones((1, len(private)), dtype=bool)
    ref_inclusion = (np.argsort(rng.random((n_targets, n_references)), axis=1) < n_references // 2).T
    ref_base = _random_rows(rng, n_references, len(aux), audit.ref_fraction)
    return AuditDesign(targets, private, aux, inclusion, base, ref_inclusion, ref_base, kinds, copies)
