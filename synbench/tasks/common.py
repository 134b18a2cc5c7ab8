"""Helpers every task uses: config nodes as plain dicts, loading the dataset, timing, the job's privacy spec, the budget check."""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Iterator

from omegaconf import DictConfig, OmegaConf

from synbench import registry
from synbench.base import FitReport, Generator, Splits
from synbench.errors import ConfigError, SynBenchError
from synbench.privacy import EPS_TOLERANCE, NoiseSource, PrivacySpec



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


def privacy_spec(cfg: DictConfig, n_private: int) -> PrivacySpec:
    """The job's budget for a private set of `n_private` documents: delta resolved once here, noise secret unless seeded."""
    noise_cfg = node(cfg, "privacy")
    unknown = sorted(set(noise_cfg) - {"noise_seed", "secure_mode"})
    if unknown:
        raise ConfigError(f"privacy config has unknown key(s) {', '.join(unknown)}; known: noise_seed, secure_mode")
    seed = noise_cfg.get("noise_seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ConfigError(f"privacy.noise_seed={seed!r} must be a non-negative integer, or null for secret noise")
    noise = NoiseSource(seed=seed, secure_mode=bool(noise_cfg.get("secure_mode", False)))
    return PrivacySpec.for_private_set(n_private, cfg.eps, cfg.delta, str(cfg.accountant), noise)


def log_private_stats(cfg: DictConfig) -> bool:
    """Whether the user opted in to releasing statistics of private data without noise (`tracking.log_private_stats`)."""
    return bool(OmegaConf.select(cfg, "tracking.log_private_stats", default=False))


def check_budget(report: FitReport, privacy: PrivacySpec, generator: Generator, name: str) -> None:
    """Fail the job when a generator answered a private request with more than it was given.

    Only a generator that declares itself a non-private control (`private =
    False`) may answer a private request with epsilon_spent = inf.
    """
    fix = "its accountant or calibration is wrong; report this to the plugin's authors"
    if not privacy.is_private:
        return
    if not report.is_private:
        if not type(generator).private:
            return
        raise SynBenchError(f"generator '{name}' was asked for eps={privacy.epsilon} but reports epsilon_spent=inf "
                            f"(no DP) without declaring itself a non-private control (`private = False`): {fix}")
    if report.epsilon_spent > privacy.epsilon * (1 + EPS_TOLERANCE):
        raise SynBenchError(f"generator '{name}' spent epsilon={report.epsilon_spent:.4f}, more than eps={privacy.epsilon}: {fix}")
    if report.delta > privacy.delta * (1 + EPS_TOLERANCE):
        raise SynBenchError(f"generator '{name}' reports delta={report.delta:.3g}, more than the job's delta="
                            f"{privacy.delta:.3g}: generators must use the delta the core passes in PrivacySpec; {fix}")
