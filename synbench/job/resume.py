"""Keys of resumable work: a saved state (DP-Gen's trained weights, the utility metric's real-data scores) is
reused only when its key matches this job's description on the same private data.

The key is `synbench.core.keyed.keyed_hash` of the description and the
corpora's digests: equal for the same job and data, and without the per-user
secret it can neither be recomputed nor tested against a candidate dataset
(the secret, where it lives and why: `synbench.core.keyed`).
"""

from __future__ import annotations

from typing import Any, Mapping

from synbench.core.corpus import Corpus
from synbench.core.keyed import keyed_hash


def resume_key(description: Mapping[str, Any], *corpora: Corpus) -> str:
    """A key that matches only for this description on these corpora, and reveals neither without the secret."""
    return keyed_hash(description, (corpus.digest() for corpus in corpora))
