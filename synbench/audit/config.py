"""`AuditConfig`: the `audit` config node (conf/task/audit.yaml), checked once, with messages that say what to fix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from synbench.audit.design import MODES
from synbench.errors import ConfigError, check_keys

TARGET_KINDS = ("outliers", "canaries", "both")
GRIDS = ("fpr_grid", "recall_grid", "eps_grid", "guess_fractions")


@dataclass(frozen=True)
class AuditConfig:
    """How an audit is designed, run and summarised; see conf/task/audit.yaml for each key."""

    mode: str = "k_subsets"
    n_targets: int | None = 50  # None: every outlier of both criteria (the paper's audit)
    far_fraction: float = 0.01
    lof_neighbors: int = 20
    lof_contamination: float | str = 0.1
    n_subsets: int = 100
    base_fraction: float = 0.5
    n_references: int = 4
    ref_fraction: float = 0.5
    n_synthetic: int | None = None
    targets: str = "both"
    n_canaries: int = 300
    canary_repeats: int = 1
    canary_prefix_words: int = 10
    canary_suffix_words: int = 15
    guess_fractions: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5)
    select_share: float = 0.25
    repeats: int = 1
    bootstrap_samples: int = 200
    fpr_grid: tuple[float, ...] = (0.001, 0.01, 0.1, 0.2)
    recall_grid: tuple[float, ...] = (0.01, 0.1)
    min_count: int = 5
    confidence: float = 0.95
    delta: float | None = None
    eps_grid: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
    save_synthetic: bool = True

    @classmethod
    def from_node(cls, node: Mapping[str, Any]) -> "AuditConfig":
        check_keys(node, cls.__dataclass_fields__, "audit config")
        grids = {k: tuple(float(v) for v in node[k]) for k in GRIDS if k in node}
        return cls(**{**node, **grids})

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"audit.mode={self.mode!r} is unknown; choose one of {', '.join(MODES)}")
        if self.targets not in TARGET_KINDS:
            raise ConfigError(f"audit.targets={self.targets!r} is unknown; choose one of {', '.join(TARGET_KINDS)}")
        if self.targets != "outliers" and self.n_canaries < 2:
            raise ConfigError(
                f"audit.n_canaries={self.n_canaries} must be at least 2 with audit.targets={self.targets}"
            )
        for key in ("canary_repeats", "canary_prefix_words", "canary_suffix_words", "repeats", "bootstrap_samples"):
            if getattr(self, key) < 1:
                raise ConfigError(f"audit.{key}={getattr(self, key)} must be a positive integer")
        if not 0 < self.select_share < 1:
            raise ConfigError(f"audit.select_share={self.select_share} must lie strictly between 0 and 1")
        if not self.guess_fractions or not all(0 < f <= 0.5 for f in self.guess_fractions):
            raise ConfigError(
                f"audit.guess_fractions={list(self.guess_fractions)} must be a non-empty list of shares "
                "of the targets in (0, 0.5] (k+ and k- each take one)"
            )
        if not 0 < self.confidence < 1:
            raise ConfigError(f"audit.confidence={self.confidence} must lie strictly between 0 and 1")
        for key in ("fpr_grid", "recall_grid"):
            if not all(0 < v <= 1 for v in getattr(self, key)):
                raise ConfigError(f"audit.{key}={list(getattr(self, key))} must hold rates in (0, 1]")
        if self.delta is not None and not 0 <= self.delta < 1:
            raise ConfigError(f"audit.delta={self.delta} must lie in [0, 1), or be null for the job's delta")
        if self.n_synthetic is not None and self.n_synthetic < 1:
            raise ConfigError(
                f"audit.n_synthetic={self.n_synthetic} must be positive, or null for a private set's planned size"
            )

    @property
    def canaries(self) -> int:
        """How many canaries the design draws: none for outlier targets only."""
        return 0 if self.targets == "outliers" else self.n_canaries

    @property
    def outliers(self) -> bool:
        return self.targets != "canaries"
