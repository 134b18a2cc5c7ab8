"""The removal ablation (the paper's table 3): which documents each run removes, and its runs.

One run is (arm, step, rep): arm `none` keeps the whole private set (the
reference row), `flagged` removes `round(step * n_flagged)` documents drawn
from the flagged ones, `random` removes the same count drawn uniformly from
the whole private set (the control). `reference: false` leaves out the `none` runs, for a caller
that has the unremoved run already (bench_contamination_planted takes it from
DP-Gen's benchmark job on the same model). Repetition r uses the same generator
seed in every arm, so arms are compared on paired runs. Every run is a
`GeneratorRun` under the job's one budget (delta resolved once, from the
whole private set) and is saved under `ablation/`, so a killed ablation resumes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from synbench.contamination.config import AblationOptions
from synbench.core.corpus import Corpus
from synbench.core.keyed import keyed_hash
from synbench.core.progress import progress
from synbench.job.run import GeneratorRun, RunRecord

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


def plan(cfg: AblationOptions) -> list[RunKey]:
    """Every run: reference runs first (unless `reference` is off), then per step and rep the flagged and
    (optionally) random arms."""
    arms = ("flagged", "random") if cfg.control else ("flagged",)
    runs = [RunKey("none", 0.0, r) for r in range(cfg.reps)] if cfg.reference else []
    return runs + [RunKey(arm, step, r) for step in cfg.steps for r in range(cfg.reps) for arm in arms]


def removed(key: RunKey, flagged: np.ndarray, n_docs: int, seed: int) -> np.ndarray:
    """Sorted positions the run removes; seeded by the job seed, step, rep and arm (a selection, not a privacy
    mechanism)."""
    if key.arm == "none":
        return np.zeros(0, dtype=int)
    positions = np.flatnonzero(flagged)
    count = int(round(key.step * positions.size))
    rng = np.random.default_rng([seed, key.rep, int(round(key.step * 1000)), ARMS.index(key.arm)])
    pool = positions if key.arm == "flagged" else np.arange(n_docs)
    return np.sort(rng.choice(pool, size=count, replace=False))


def flags_digest(flagged: np.ndarray) -> str:
    """A digest of which documents are flagged (positions only): saved runs are reused only for the same flags."""
    return keyed_hash({"flagged": np.flatnonzero(flagged).tolist()}, ())  # keyed: which documents is private


def run_ablation(
    cfg: AblationOptions,
    flagged: np.ndarray,
    train: Corpus,
    base: GeneratorRun,
    folder: Path,
    job_key: str,
    utility: Callable[[Corpus, Corpus], Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], int]:
    """Every run of the plan (saved ones reused) and how many were resumed.

    `base` is the run every step shares: the generator, the job's budget and
    the synthetic size; each run adds its record, fit seed (its rep) and noise
    stream. `utility(private, synthetic)` scores a run's synthetic corpus.
    """
    identity = {"job_key": job_key, "flags": flags_digest(flagged)}
    runs, resumed = [], 0
    for key in progress(plan(cfg), desc="ablation runs", unit="run"):
        drop = set(removed(key, flagged, len(train), base.seed).tolist())
        private = train.subset([i for i in range(len(train)) if i not in drop])
        run = replace(
            base,
            seed_path=(key.rep,),
            noise_run=key.index,
            record=RunRecord(folder / f"{key.name}.json", identity),
            extra={"arm": key.arm, "step": key.step, "rep": key.rep, "n_removed": len(drop)},
        )

        def score(synthetic: Corpus, _: Any, private: Corpus = private) -> dict[str, Any]:
            values = utility(private, synthetic)
            return {"f1_micro": values["f1_micro"], "f1_macro": values.get("f1_macro")}

        done = run.execute(private, score)
        runs.append(done.record)
        resumed += done.resumed
    return runs, resumed
