"""The model audit's own costs: the three attacks at paper scale, and one logistic head (non-DP and DP-SGD).

Attacks: 5,000 targets, 16 reference models (each target IN for 8), 1,000
RMIA population samples, single-label statistics drawn from a model of
per-example hardness plus a membership shift (so the scores are not
degenerate); RMIA compares every target with every z, by one sort of z
per label. Target: all three attacks in < 1 s on 2 cores.
Head: the default task head (30 epochs, expected batch 32, MiniLM-sized
384-dim features) on 200 documents, trained through the DP-SGD core
without noise and at eps = 4 (PRV calibration included). Target: < 10 s
per model without DP and < 30 s with DP, so the four regimes' classifiers
are a small part of a demo whose cost is the generator runs.
"""

from __future__ import annotations

import os
import time

import numpy as np

from synbench.audit.roc import RocCurve
from synbench.core.base import ModelSignals
from synbench.core.privacy import NoiseSource, PrivacySpec
from synbench.model_audit.attacks import LiraAttack, LogitAttack, RmiaAttack
from synbench.model_audit.config import HeadOptions
from synbench.model_audit.head import LogisticHead

N_TARGETS, N_REFS, N_POP = 5000, 16, 1000
N_DOCS, DIM = 200, 384


def attack_figures(rng: np.random.Generator) -> dict[str, object]:
    hardness = rng.normal(size=(N_TARGETS, 1))
    inclusion = (np.argsort(rng.random((N_TARGETS, N_REFS)), axis=1) < N_REFS // 2).T
    members = rng.random(N_TARGETS) < 0.5
    noise = lambda *shape: rng.normal(scale=0.5, size=shape)  # noqa: E731
    pop = rng.normal(size=(N_POP, 1))
    signals = ModelSignals(
        hardness + members[:, None] + noise(N_TARGETS, 1),
        hardness[None] + inclusion[..., None] + noise(N_REFS, N_TARGETS, 1),
        inclusion,
        pop + noise(N_POP, 1),
        pop[None] + noise(N_REFS, N_POP, 1),
    )
    out: dict[str, object] = {}
    total = 0.0
    for name, attack in {"logits": LogitAttack(), "lira": LiraAttack(), "rmia": RmiaAttack()}.items():
        start = time.perf_counter()
        scores = attack.score_models(signals)
        elapsed = time.perf_counter() - start
        total += elapsed
        out[name] = {"seconds": round(elapsed, 3), "auc": round(RocCurve.from_scores(scores, members).auc(), 3)}
    out["total_s"] = round(total, 3)
    out["meets_1s"] = total < 1.0
    return out


def head_figures(rng: np.random.Generator) -> dict[str, object]:
    x = rng.normal(size=(N_DOCS + 50, DIM)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = np.eye(3, dtype=int)[rng.integers(3, size=N_DOCS)]
    head = LogisticHead(HeadOptions(num_threads=1), lambda texts: x[[int(t) for t in texts]])
    train, evaluate = [str(i) for i in range(N_DOCS)], [str(i) for i in range(N_DOCS, N_DOCS + 50)]
    out: dict[str, object] = {}
    for label, eps in (("non_dp", float("inf")), ("dp_eps4", 4.0)):
        start = time.perf_counter()
        _, spent = head.fit_predict(train, y, evaluate, False, PrivacySpec(eps, 1 / N_DOCS**2, "prv", NoiseSource()))
        out[label] = {"seconds": round(time.perf_counter() - start, 2), "epsilon_spent": spent}
    out["meets_10s_non_dp"] = out["non_dp"]["seconds"] < 10  # type: ignore[index]
    out["meets_30s_dp"] = out["dp_eps4"]["seconds"] < 30  # type: ignore[index]
    return out


def main() -> dict:
    rng = np.random.default_rng(0)
    return {
        "cpus": os.cpu_count(),
        "targets": N_TARGETS,
        "references": N_REFS,
        "population": N_POP,
        "attacks": attack_figures(rng),
        "head": head_figures(rng),
    }


if __name__ == "__main__":
    print(main())
