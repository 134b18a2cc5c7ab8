"""Calibration of the one-run audit against leaks of known size, per attack and combined (`attack=[ngram,similarity]`).

A generator that claims eps = 1 releases each private document with
probability `leak share` after swapping a share of its words for random
public words (experiments/benchmarks/calibration_generator.py). For each cell
of leak share {1, 0.5, 0.25} x words swapped {0.2, 0.5}: the one-run bound
per attack and combined (`eps_emp_lower`; above 1 catches the lie), and the
same for R = 3 runs pooled into one game (`audit.repeats=3`, `pooled.*`).
Then the example DP plugin at eps = 1 over 20 seeds (its bounds must stay at
or below 1) and the null (the calibration generator with leak share 0,
which never reads a private document) over 40 seeds, whose mean eps_emp must
be near 0. All audits use the demo data with default targets (outliers and
canaries) and the default similarity (word Jaccard).

CALIBRATION_SEEDS and CALIBRATION_NULL_SEEDS shrink the seed loops; the
figures record what ran. The whole run is about 50 audits: about 20 minutes
on 2 busy cores.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_audit import demo_audit  # noqa: E402  (a sibling benchmark module, not a package)
from calibration_generator import ParaphraseLeakGenerator  # noqa: E402

LEAK_SHARES, SWAP_SHARES, REPEATS = (1.0, 0.5, 0.25), (0.2, 0.5), 3
SEEDS = int(os.environ.get("CALIBRATION_SEEDS", "20"))
NULL_SEEDS = int(os.environ.get("CALIBRATION_NULL_SEEDS", "40"))  # a null audit takes seconds; its mean needs many
ONE_RUN = ["attack=[ngram,similarity]", "audit.mode=one_run", "eps=1"]
PARTS = ("", "ngram.", "similarity.")  # combined, then each attack alone
NAMES = {"": "combined", "ngram.": "ngram", "similarity.": "similarity"}
KEYS = tuple(f"{part}{key}" for part in PARTS for key in ("eps_emp_lower", "eps_emp", "auc")) + (
    "attack_chosen",
    "n_targets",
    *(f"pooled.{part}eps_emp_lower" for part in PARTS),
    "pooled.attack_chosen",
    *(f"eps_emp_lower_run_{r}" for r in range(REPEATS)),
)


def by_attack(figures: dict, key: str, prefix: str = "") -> dict[str, float]:
    """{combined, ngram, similarity: figures[prefix + part + key]}."""
    return {NAMES[part]: figures.get(f"{prefix}{part}{key}") for part in PARTS}


def cell(leak: float, swap: float) -> dict:
    """One grid cell: an audit with R = 3 repeats; its first repeat is the one-run audit."""
    figures = demo_audit(
        [*ONE_RUN, "generator=copy", f"audit.repeats={REPEATS}"],
        generator=lambda: ParaphraseLeakGenerator(leak, swap),
        keys=KEYS,
    )
    one, pooled = by_attack(figures, "eps_emp_lower"), by_attack(figures, "eps_emp_lower", "pooled.")
    print(
        f"calibration leak {leak:g} swap {swap:g}: one run {one}, pooled {pooled}, {figures['wall_s']} s",
        file=sys.stderr,
        flush=True,
    )  # progress of a long benchmark
    return {
        "one_run_eps_emp_lower": one,
        "pooled_r3_eps_emp_lower": pooled,
        "per_run_combined_eps_emp_lower": [figures.get(f"eps_emp_lower_run_{r}") for r in range(REPEATS)],
        "one_run_auc": by_attack(figures, "auc"),
        "attack_chosen": figures.get("attack_chosen"),
        "caught_one_run": one["combined"] > 1,
        "caught_r3": pooled["combined"] > 1,
        "wall_s": figures["wall_s"],
    }


def seeds(overrides: list[str], n: int, generator=None) -> dict:
    """Per attack and combined over n seeds: the bound's max, mean and count above 1; eps_emp's mean."""
    runs = []
    for s in range(n):
        runs.append(demo_audit([*overrides, f"seed={s}"], generator=generator, keys=KEYS))
        print(
            f"calibration {overrides[0]} seed {s}: bound {runs[-1]['eps_emp_lower']}, {runs[-1]['wall_s']} s",
            file=sys.stderr,
            flush=True,
        )
    out: dict = {"seeds": n, "wall_s_mean": round(float(np.mean([r["wall_s"] for r in runs])), 1)}
    for part in PARTS:
        lower = [r[f"{part}eps_emp_lower"] for r in runs]
        out[NAMES[part]] = {
            "eps_emp_lower_max": max(lower),
            "eps_emp_lower_mean": round(float(np.mean(lower)), 3),
            "over_1": int(sum(v > 1 for v in lower)),
            "eps_emp_mean": round(float(np.mean([r[f"{part}eps_emp"] for r in runs])), 3),
        }
    return out


def main() -> dict:
    start = time.perf_counter()
    out: dict = {
        "load_average_at_start": os.getloadavg()[0],
        "claimed_eps": 1.0,
        "repeats_pooled": REPEATS,
        "grid": {f"leak_{leak:g}_swap_{swap:g}": cell(leak, swap) for leak in LEAK_SHARES for swap in SWAP_SHARES},
    }
    out["example_eps1"] = seeds(["generator=example", *ONE_RUN], SEEDS)
    out["null_leak_0"] = seeds(["generator=copy", *ONE_RUN], NULL_SEEDS, lambda: ParaphraseLeakGenerator(0.0, 0.0))
    grid = out["grid"]
    out["done_when"] = {
        "one_run_catches_every_cell_with_leak_share_at_least_0.5": all(
            c["caught_one_run"] for name, c in grid.items() if float(name.split("_")[1]) >= 0.5
        ),
        "r3_catches_every_cell": all(c["caught_r3"] for c in grid.values()),
        "example_eps1_never_above_1": all(
            v["over_1"] == 0 for k, v in out["example_eps1"].items() if isinstance(v, dict)
        ),
        "null_mean_eps_emp_within_0.1_of_0": all(
            abs(v["eps_emp_mean"]) <= 0.1 for v in out["null_leak_0"].values() if isinstance(v, dict)
        ),
    }
    out["load_average_at_end"] = os.getloadavg()[0]
    out["wall_s"] = round(time.perf_counter() - start, 1)
    return out


if __name__ == "__main__":
    print(main())
