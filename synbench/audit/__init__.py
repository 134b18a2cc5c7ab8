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

from synbench.core.exports import lazy_exports

# each public name and the module that defines it
EXPORTS = {
    "AuditOptions": "synbench.audit.config",
    "AuditDesign": "synbench.audit.design",
    "RocCurve": "synbench.audit.roc",
    "bonferroni_epsilon_lower_bound": "synbench.audit.epsilon",
    "clopper_pearson_upper": "synbench.audit.epsilon",
    "cross_fitted_epsilon": "synbench.audit.crossfit",
    "empirical_epsilon": "synbench.audit.epsilon",
    "empirical_epsilon_curve": "synbench.audit.epsilon",
    "empirical_epsilon_lower_bound": "synbench.audit.epsilon",
    "epsilon_lower_bounds_from_counts": "synbench.audit.epsilon",
    "gdp_mu_lower_bounds_from_counts": "synbench.audit.fdp",
    "holdout_lower_bound": "synbench.audit.crossfit",
    "make_design": "synbench.audit.design",
    "one_run_epsilon_lower_bound": "synbench.audit.one_run",
    "one_run_epsilon_lower_bounds": "synbench.audit.one_run",
    "one_run_gdp_mu_lower_bound": "synbench.audit.fdp",
    "one_run_gdp_mu_lower_bounds": "synbench.audit.fdp",
    "one_run_guesses": "synbench.audit.one_run",
    "one_run_p_value": "synbench.audit.one_run",
    "select_targets": "synbench.audit.targets",
    "summarise": "synbench.audit.summary",
    "target_folds": "synbench.audit.crossfit",
}
__all__ = sorted(EXPORTS)

__getattr__ = lazy_exports(__name__, EXPORTS)
