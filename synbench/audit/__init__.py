"""The privacy audit: outlier targets, the membership design, the n-gram attack and empirical epsilon.

`task=audit` (synbench/tasks/audit.py) wires these together; each piece is
usable on its own, for example `empirical_epsilon(0.1, 0.38, 0)` (about 1.34).
"""
from synbench.audit.config import AuditConfig
from synbench.audit.design import AuditDesign, make_design
from synbench.audit.epsilon import (
    clopper_pearson_upper,
    empirical_epsilon,
    empirical_epsilon_curve,
    empirical_epsilon_lower_bound,
)
from synbench.audit.one_run import one_run_epsilon_lower_bound, one_run_guesses, one_run_p_value
from synbench.audit.roc import RocCurve
from synbench.audit.summary import summarise
from synbench.audit.targets import select_targets

__all__ = [
    "AuditConfig",
    "AuditDesign",
    "RocCurve",
    "clopper_pearson_upper",
    "empirical_epsilon",
    "empirical_epsilon_curve",
    "empirical_epsilon_lower_bound",
    "make_design",
    "one_run_epsilon_lower_bound",
    "one_run_guesses",
    "one_run_p_value",
    "select_targets",
    "summarise",
]
