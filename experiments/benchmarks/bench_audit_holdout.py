"""The holdout attacks (`attack=[holdout,rare_echo]`) calibrated on bench_audit_calibration's leaks of known size.

The same lying generator, demo data, targets and 1,000 canaries as
bench_audit_calibration (its `ONE_RUN`, with these two attacks in place of
the n-gram and similarity ones; docs/audit.md says what each assumes): per
cell of leak share {1, 0.5, 0.25} x words swapped {0.2, 0.5}, the one-run
bound per attack and combined (above 1 catches the lie); the example DP
plugin at eps = 1 over HOLDOUT_EXAMPLE_SEEDS seeds (never above 1; how often
above 0) and the null (leak share 0: no private document is read) over
HOLDOUT_NULL_SEEDS seeds, whose bound may be above 0 in no more than the
audit's 5% of runs and whose mean eps_emp must be within 3 SE of 0. About
10 minutes on 2 idle cores.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_audit import demo_audit  # noqa: E402  (sibling modules, not a package)
from bench_audit_calibration import LEAK_SHARES, ONE_RUN, SWAP_SHARES, attack_parts, by_attack, seeds  # noqa: E402
from calibration_generator import ParaphraseLeakGenerator  # noqa: E402

ATTACKS = ("holdout", "rare_echo")
AUDIT = [f"attack=[{','.join(ATTACKS)}]", *(o for o in ONE_RUN if not o.startswith("attack="))]
EXAMPLE_SEEDS = int(os.environ.get("HOLDOUT_EXAMPLE_SEEDS", "20"))
NULL_SEEDS = int(os.environ.get("HOLDOUT_NULL_SEEDS", "100"))


def cell(leak: float, swap: float) -> dict:
    """One grid cell's one-run audit: the bound and AUC per attack and combined, the attack the cross-fit chose."""
    parts = attack_parts(ATTACKS)
    keys = [f"{part}{key}" for part in parts for key in ("eps_emp_lower", "auc")] + ["attack_chosen"]
    figures = demo_audit([*AUDIT, "generator=copy"], generator=lambda: ParaphraseLeakGenerator(leak, swap), keys=keys)
    print(f"holdout attacks, leak {leak:g} swap {swap:g}: {figures['eps_emp_lower']}", file=sys.stderr, flush=True)
    bound = by_attack(figures, "eps_emp_lower", parts=parts)
    return {
        "one_run_eps_emp_lower": bound,
        "one_run_auc": by_attack(figures, "auc", parts=parts),
        "attack_chosen": figures.get("attack_chosen"),
        "caught_one_run": bound["combined"] > 1,
        "wall_s": figures["wall_s"],
    }


def main() -> dict:
    start = time.perf_counter()
    out: dict = {
        "load_average_at_start": os.getloadavg()[0],
        "claimed_eps": 1.0,
        "attacks": list(ATTACKS),
        "grid": {f"leak_{leak:g}_swap_{swap:g}": cell(leak, swap) for leak in LEAK_SHARES for swap in SWAP_SHARES},
    }
    out["example_eps1"] = seeds(["generator=example", *AUDIT], EXAMPLE_SEEDS, attacks=ATTACKS)
    null = lambda: ParaphraseLeakGenerator(0.0, 0.0)  # noqa: E731
    out["null_leak_0"] = seeds(["generator=copy", *AUDIT], NULL_SEEDS, null, attacks=ATTACKS)
    combined = out["null_leak_0"]["combined"]
    out["done_when"] = {
        "one_run_catches_leak_0.25_swap_0.5_above_0": out["grid"]["leak_0.25_swap_0.5"]["one_run_eps_emp_lower"][
            "combined"
        ]
        > 0,
        "example_eps1_never_above_1": all(
            v["over_1"] == 0 for v in out["example_eps1"].values() if isinstance(v, dict)
        ),
        "null_positive_share_within_the_5%_level": combined["positive_share_ci95"][0] <= 0.05,
        "null_mean_eps_emp_within_3_se_of_0": abs(combined["eps_emp_mean"]) <= 3 * (combined["eps_emp_se"] or 0.0),
    }
    out["cells_caught_one_run"] = sum(c["caught_one_run"] for c in out["grid"].values())
    out["wall_s"] = round(time.perf_counter() - start, 1)
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(main(), indent=2))
