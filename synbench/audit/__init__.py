"""The privacy audit: outlier targets, the membership design, the n-gram attack and empirical epsilon.

`task=audit` (synbench/tasks/audit.py) wires these together; each piece is
usable on its own, for example `empirical_epsilon(0.1, 0.38, 0)` (about 1.34).
Bounds take scores (`RocCurve`, `summarise`) or confusion counts directly
(`epsilon_lower_bounds_from_counts`, `bonferroni_epsilon_lower_bound`,
`gdp_mu_lower_bounds_from_counts`, `one_run_epsilon_lower_bound`,
`one_run_gdp_mu_lower_bound`).
"""

from synbench.audit.config import AuditConfig
from synbench.audit.crossfit import cross_fitted_epsilon, holdout_lower_bound, target_folds
from synbench.audit.design import AuditDesign, make_design
from synbench.audit.epsilon import (
    bonferroni_epsilon_lower_bound,
    clopper_pearson_upper,
    empirical_epsilon,
    empirical_epsilon_curve,
    empirical_epsilon_lower_bound,
    epsilon_lower_bounds_from_counts,
)
from synbench.audit.fdp import gdp_mu_lower_bounds_from_counts, one_run_gdp_mu_lower_bound, one_run_gdp_mu_lower_bounds
from synbench.audit.one_run import (
    one_run_epsilon_lower_bound,
    one_run_epsilon_lower_bounds,
    one_run_guesses,
    one_run_p_value,
)
from synbench.audit.roc import RocCurve
from synbench.audit.summary import summarise
from synbench.audit.targets import select_targets

__all__ = [
    "AuditConfig",
    "AuditDesign",
    "RocCurve",
    "bonferroni_epsilon_lower_bound",
    "clopper_pearson_upper",
    "cross_fitted_epsilon",
    "empirical_epsilon",
    "empirical_epsilon_curve",
    "empirical_epsilon_lower_bound",
    "epsilon_lower_bounds_from_counts",
    "gdp_mu_lower_bounds_from_counts",
    "holdout_lower_bound",
    "make_design",
    "one_run_epsilon_lower_bound",
    "one_run_epsilon_lower_bounds",
    "one_run_gdp_mu_lower_bound",
    "one_run_gdp_mu_lower_bounds",
    "one_run_guesses",
    "one_run_p_value",
    "select_targets",
    "summarise",
    "target_folds",
]
