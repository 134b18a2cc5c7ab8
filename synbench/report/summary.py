"""The few lines a job prints when it finishes: the budget spent and the headline figures beside their references.

Presentation of one job's results, kept with the report (which renders a
sweep's); the lifecycle that runs the job never formats figures.
"""

from __future__ import annotations

from typing import Any

from synbench.release import control_results
from synbench.report.stats import format_job_eps, macro_f1_leads
from synbench.results import number

# (section, key, label, reference keys as (label, section.key)) of the figures a person reads first.
F1_MICRO = (
    "utility",
    "f1_micro",
    "F1 micro",
    (("random", "utility.random_f1"), ("majority", "utility.majority_f1"), ("real", "utility.real_f1")),
)
F1_MACRO = (
    "utility",
    "f1_macro",
    "F1 macro",
    (
        ("random", "utility.random_f1_macro"),
        ("majority", "utility.majority_f1_macro"),
        ("real", "utility.real_f1_macro"),
    ),
)
HEADLINES = (
    ("fidelity", "mauve", "MAUVE", (("real vs real", "fidelity.mauve_ref"),)),
    (
        "fidelity",
        "label_cardinality_div",
        "label-cardinality JS",
        (("real vs real", "fidelity.label_cardinality_div_ref"),),
    ),
    ("audit", "auc", "attack AUC", ()),
    ("audit", "eps_emp_lower", "eps_emp lower bound", (("nominal eps", "epsilon"),)),
)


def summary(results: dict[str, Any]) -> str:
    """A few lines for the terminal: the budget spent and the headline figures beside their reference rows."""

    def value(path: str) -> Any:
        section, _, key = path.partition(".")
        return results.get(section, {}).get(key) if key else results.get(section)

    def show(v: Any) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    eps = number(results.get("epsilon"))
    shown_eps = show(results.get("epsilon")) if eps is None else format_job_eps(eps, control_results(results))
    lines = [
        f"{results.get('task')} {results.get('generator')} on {results.get('dataset')}: "
        f"eps={shown_eps}, "
        f"epsilon_spent={show(results.get('epsilon_spent'))}, delta={show(results.get('delta'))}"
    ]
    utility = results.get("utility", {})  # macro F1 first where micro F1 mostly counts the majority class
    f1 = (
        (F1_MACRO, F1_MICRO)
        if macro_f1_leads(utility.get("majority_f1"), utility.get("random_f1"))
        else (F1_MICRO, F1_MACRO)
    )
    for section, key, label, refs in (*f1, *HEADLINES):
        if key in results.get(section, {}):
            ref = ", ".join(f"{name} {show(value(path))}" for name, path in refs if value(path) is not None)
            lines.append(f"  {label}: {show(results[section][key])}" + (f" ({ref})" if ref else ""))
    return "\n".join(lines)
