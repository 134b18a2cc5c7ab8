"""The removal ablation's plan (the paper's table 3): which documents each run removes.

One run is (arm, step, rep): arm `none` keeps the whole private set (the
reference row), `flagged` removes `round(step * n_flagged)` documents drawn
from the flagged ones, `random` removes the same count drawn uniformly from
the whole private set (the control). Repetition r uses the same generator
seed in every arm (`tasks/contamination.py` runs and saves each run), so arms
are compared on paired runs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synbench.contamination.config import AblationConfig

ARMS = ("none", "flagged", "random")


@dataclass(frozen=True)
class RunKey:
    arm: str
    step: float
    rep: int

    @property
    def name(self) -> str:
        return f"{self.arm}_{self.step:g}_r{self.rep:02d}"

    @property
    def index(self) -> int:
        """A distinct integer per run (the privacy noise of run k is `noise.for_run(k)`)."""
        return (ARMS.index(self.arm) * 1001 + int(round(self.step * 1000))) * 10_007 + self.rep


def plan(cfg: AblationConfig) -> list[RunKey]:
    """Every run: reference runs first, then per step and rep the flagged and (optionally) random arms."""
    arms = ("flagged", "random") if cfg.control else ("flagged",)
    runs = [RunKey("none", 0.0, r) for r in range(cfg.reps)]
    return runs + [RunKey(arm, step, r) for step in cfg.steps for r in range(cfg.reps) for arm in arms]


def removed(key: RunKey, flagged: np.ndarray, n_docs: int, seed: int) -> np.ndarray:
    """Sorted positions the run removes; seeded by the job seed, step, rep and arm (a selection, not a privacy mechanism)."""
    if key.arm == "none":
        return np.zeros(0, dtype=int)
    positions = np.flatnonzero(flagged)
    count = int(round(key.step * positions.size))
    rng = np.random.default_rng([seed, key.rep, int(round(key.step * 1000)), ARMS.index(key.arm)])
    pool = positions if key.arm == "flagged" else np.arange(n_docs)
    return np.sort(rng.choice(pool, size=count, replace=False))
