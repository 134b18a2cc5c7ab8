"""`AuditConfig`: the `audit` config node (conf/task/audit.yaml), checked once, with messages that say what to fix."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from synbench.audit.design import MODES
from synbench.errors import ConfigError


@dataclass(frozen=True)
class AuditConfig:
    """How an audit is designed, run and summarised; see conf/task/audit.yaml for each key."""

    mode: str = "k_subsets"
    n_targets: int = 50
    far_fraction: float = 0.01
    lof_neighbors: int = 20
    lof_contamination: float | str = 0.1
    n_subsets: int = 100
    base_fraction: float = 0.5
    n_references: int = 4
    ref_fraction: float = 0.5
    n_synthetic: int | None = None
    k_pos: float = 0.25
    k_neg: float = 0.25
    fpr_grid: tuple[float, ...] = (0.001, 0.01, 0.1)
    recall_grid: tuple[float, ...] = (0.01, 0.1)
    min_count: int = 5
    confidence: float = 0.95
    delta: float | None = None
    eps_grid: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
    save_synthetic: bool = True

    @classmethod
    def from_node(cls, node: Mapping[str, Any]) -> "AuditConfig":
        unknown = sorted(set(node) - set(cls.__dataclass_fields__))
        if unknown:
            raise ConfigError(f"audit config has unknown key(s) {', '.join(unknown)}; known: {', '.join(cls.__dataclass_fields__)}")
        grids = {k: tuple(float(v) for v in node[k]) for k in ("fpr_grid", "recall_grid", "eps_grid") if k in node}
        return cls(**{**node, **grids})

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"audit.mode={self.mode!r} is unknown; choose one of {', '.join(MODES)}")
        for key in ("k_pos", "k_neg"):
            if not 0 <= getattr(self, key) <= 1:
                raise ConfigError(f"audit.{key}={getattr(self, key)} is a fraction of the targets and must lie in [0, 1]")
        if self.k_pos + self.k_neg > 1 or self.k_pos + self.k_neg == 0:
            raise ConfigError(f"audit.k_pos + audit.k_neg = {self.k_pos + self.k_neg} must lie in (0, 1]: they share the targets")
        if not 0 < self.confidence < 1:
            raise ConfigError(f"audit.confidence={self.confidence} must lie strictly between 0 and 1")
        for key in ("fpr_grid", "recall_grid"):
            if not all(0 < v <= 1 for v in getattr(self, key)):
                raise ConfigError(f"audit.{key}={list(getattr(self, key))} must hold rates in (0, 1]")
        if self.delta is not None and not 0 <= self.delta < 1:
            raise ConfigError(f"audit.delta={self.delta} must lie in [0, 1), or be null for the job's delta")
        if self.n_synthetic is not None and self.n_synthetic < 1:
            raise ConfigError(f"audit.n_synthetic={self.n_synthetic} must be positive, or null for a private set's planned size")

    def guesses(self, n_targets: int) -> tuple[int, int]:
        """(k+, k-) of the one-run audit: the fractions of the targets, rounded down, fixed before any score is seen."""
        return math.floor(self.k_pos * n_targets), math.floor(self.k_neg * n_targets)
