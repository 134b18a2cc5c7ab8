"""The privacy audit: outlier targets, the membership design, the n-gram attack and empirical epsilon.

`task=audit` (synbench/tasks/audit.py) wires these together; each piece is
usable on its own, for example `empirical_epsilon(0.1, 0.38, 0)` (about 1.34).
Bounds take scores (`RocCurve`, `summarise`) or confusion counts directly
(`epsilon_lower_bounds_from_counts`, `bonferroni_epsilon_lower_bound`,
`gdp_mu_lower_bounds_from_counts`, `one_run_epsilon_lower_bound`,
`one_run_gdp_mu_lower_bound`).

Names are imported from their modules on first use (PEP 562), so `synbench.audit.config`, which the config schema
reads at every CLI start, does not pull in scikit-learn and scipy with the attacks.
"""

from __future__ import annotations

import importlib
from typing import Any

# each public name and the module of this package that defines it
EXPORTS = {
    "AuditConfig": "config",
    "AuditDesign": "design",
    "RocCurve": "roc",
    "bonferroni_epsilon_lower_bound": "epsilon",
    "clopper_pearson_upper": "epsilon",
    "cross_fitted_epsilon": "crossfit",
    "empirical_epsilon": "epsilon",
    "empirical_epsilon_curve": "epsilon",
    "empirical_epsilon_lower_bound": "epsilon",
    "epsilon_lower_bounds_from_counts": "epsilon",
    "gdp_mu_lower_bounds_from_counts": "fdp",
    "holdout_lower_bound": "crossfit",
    "make_design": "design",
    "one_run_epsilon_lower_bound": "one_run",
    "one_run_epsilon_lower_bounds": "one_run",
    "one_run_gdp_mu_lower_bound": "fdp",
    "one_run_gdp_mu_lower_bounds": "fdp",
    "one_run_guesses": "one_run",
    "one_run_p_value": "one_run",
    "select_targets": "targets",
    "summarise": "summary",
    "target_folds": "crossfit",
}
__all__ = sorted(EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{EXPORTS[name]}"), name)
