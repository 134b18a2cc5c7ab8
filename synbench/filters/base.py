"""The filter plugin kind: a `Filter` picks which synthetic documents to keep (`synbench.filters` group)."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from synbench.core.base import Plugin
from synbench.core.corpus import Corpus


@dataclass(frozen=True)
class Selection:
    """What a filter kept: positions in the synthetic corpus, the per-document scores it ranked by (None if it has
    none) and its public settings for `results["filter"]` (never private data: a filter reads synthetic text only)."""

    keep: np.ndarray
    scores: np.ndarray | None = None
    record: Mapping[str, Any] = field(default_factory=dict)


class Filter(Plugin):
    """A post-hoc filter of synthetic text. Registered under `synbench.filters`; conf/filter/<name>.yaml names it
    with `_plugin_` and its other keys are constructor keywords.

    It sees the synthetic corpus and public models only, so filtering is
    post-processing of DP output and spends no budget.
    """

    entry_point_group = "synbench.filters"

    @abstractmethod
    def select(self, synthetic: Corpus) -> Selection | None:
        """The documents to keep, or None to keep all and score nothing twice (`filter=none`)."""


class NoFilter(Filter):
    """`filter=none`: every synthetic document is scored once."""

    def select(self, synthetic: Corpus) -> Selection | None:
        return None
