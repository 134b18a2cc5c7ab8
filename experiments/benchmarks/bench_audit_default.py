"""The default audit's calibration: every shipped attack and every target kind, as `task=audit` runs by default.

Since issue 56 the headline bound combines five attacks and three families of
targets (every target, the outliers alone, the canaries alone), chosen on a
held-out fold and paid for by Bonferroni. This measures that its false alarms
stay within the level, with bench_audit_calibration's `seeds` on the demo
data, one-run mode, eps = 1, the default design (300 canaries) and attacks:

- `example_eps1`: the example DP plugin at eps = 1 (its bound must stay at or
  below 1, and above 0 in no more than the audit's 5% of runs);
- `null`: the calibration generator with leak share 0, which never reads a
  private document (above 0 in no more than 5% of runs).

DEFAULT_AUDIT_SEEDS sets the seeds of each (default 40: about 10 s an audit,
15 minutes in all on 2 idle cores); the figures record what ran, with the
Clopper-Pearson interval on the share of positive bounds.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_audit_calibration import seeds  # noqa: E402  (sibling modules, not a package)
from calibration_generator import ParaphraseLeakGenerator  # noqa: E402

ATTACKS = ("ngram", "similarity", "rare_echo", "holdout", "run_echo")  # task=audit's default
DEFAULT = ["audit.mode=one_run", "eps=1"]
SEEDS = int(os.environ.get("DEFAULT_AUDIT_SEEDS", "40"))


def main() -> dict:
    start = time.perf_counter()
    out: dict = {"load_average_at_start": os.getloadavg()[0], "claimed_eps": 1.0, "attacks": list(ATTACKS)}
    out["example_eps1"] = seeds(["generator=example", *DEFAULT], SEEDS, attacks=ATTACKS)
    out["null"] = seeds(["generator=copy", *DEFAULT], SEEDS, lambda: ParaphraseLeakGenerator(0.0, 0.0), attacks=ATTACKS)
    out["done_when"] = {
        "example_eps1_never_above_1": out["example_eps1"]["combined"]["eps_emp_lower_max"] <= 1.0,
        # the share of positive bounds is within the 5% level: its interval's lower end at most 0.05
        "example_eps1_positive_within_the_5%_level": out["example_eps1"]["combined"]["positive_share_ci95"][0] <= 0.05,
        "null_positive_within_the_5%_level": out["null"]["combined"]["positive_share_ci95"][0] <= 0.05,
    }
    out["load_average_at_end"] = os.getloadavg()[0]
    out["wall_s"] = round(time.perf_counter() - start, 1)
    return out
