"""Helpers every task uses: config nodes as plain dicts, loading the dataset, timing, the budget check."""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Iterator

from omegaconf import DictConfig, OmegaConf

from synbench import registry
from synbench.base import FitReport, Splits
from synbench.errors import SynBenchError
from synbench.privacy import PrivacySpec

# A generator may not report more than it was given (float tolerance of accountants' solvers).
EPS_TOLERANCE = 1e-6


class Stopwatch(dict):
    """Seconds per named step, as `<step>_s` keys."""

    @contextmanager
    def __call__(self, step: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self[f"{step}_s"] = round(time.perf_counter() - start, 3)


def node(cfg: DictConfig, key: str) -> dict[str, Any]:
    value = OmegaConf.select(cfg, key)
    return OmegaConf.to_container(value, resolve=True) if value is not None else {}  # type: ignore[return-value]


def load_splits(cfg: DictConfig, seed: int) -> Splits:
    return registry.create("datasets", node(cfg, "dataset")).load(seed)


def check_budget(report: FitReport, privacy: PrivacySpec, generator: str) -> None:
    if privacy.is_private and report.is_private and report.epsilon_spent > privacy.epsilon * (1 + EPS_TOLERANCE):
        raise SynBenchError(
            f"generator '{generator}' spent epsilon={report.epsilon_spent:.4f}, more than eps={privacy.epsilon}: "
            "its accountant or calibration is wrong; report this to the plugin's authors"
        )
