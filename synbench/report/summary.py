"""The lines a job prints when it finishes: first what a reader concludes, in plain words, then the figures.

Presentation of one job's results, kept with the report (which renders a
sweep's); the lifecycle that runs the job never formats figures. The plain
words come first and each says what it is compared with or what the job could
not have seen:

- disclosure: how many private documents the release reproduces
  (near-)verbatim against how many real documents the generator never saw
  (`synbench.audit.disclosure`), whatever eps was claimed;
- utility: the headline F1 against random and majority, flagged where it is
  below either; the public-knowledge baselines (`public`, `template`) are
  other jobs, so one job says how to get them;
- audit: its verdict beside its ceiling, or, where the task ran none, the
  command that runs one.
"""

from __future__ import annotations

import math
from typing import Any

from synbench.core.revisions import names_folder, pinned
from synbench.job.record import number
from synbench.job.release import control_results
from synbench.report.stats import format_job_eps, macro_f1_leads

# (section, key, label, reference keys as (label, section.key)) of the figures a person reads first.
F1_MICRO = (
    "utility",
    "f1_micro",
    "F1 micro",
    (
        ("random", "utility.random_f1"),
        ("majority", "utility.majority_f1"),
        ("real", "utility.real_f1"),
        ("real at this size", "utility.matched_real_f1"),
    ),
)
F1_MACRO = (
    "utility",
    "f1_macro",
    "F1 macro",
    (
        ("random", "utility.random_f1_macro"),
        ("majority", "utility.majority_f1_macro"),
        ("real", "utility.real_f1_macro"),
        ("real at this size", "utility.matched_real_f1_macro"),
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
    ("audit", "eps_ceiling", "eps ceiling (a perfect attack's bound)", ()),
)


def show(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def disclosure_line(found: dict[str, Any]) -> str | None:
    """The disclosure check in words: counts against the unseen documents' and the exact test; a count too small
    for the test to attribute, or groups it could not check, said as such (its `status`), never "not flagged";
    None if it did not run."""
    if not found or "private_reappear" not in found:
        return None
    counts = (
        f"Disclosure: {found['private_reappear']} of {found['n_private']} private documents reappear "
        f"(near-)verbatim; {found['unseen_reappear']} of {found['n_unseen']} unseen ones do"
    )
    status = found.get("status")
    if status == "could not check":
        return f"{counts}: could not check (too few documents hold text of their own for the test to flag any count)"
    if status == "below attribution":
        return f"{counts}: below what this test can attribute (it flags from {found['min_flaggable']} documents up)"
    verdict = "FLAGGED: the release reproduces private documents" if found.get("flagged") else "not flagged"
    return f"{counts} (one-sided exact test p={show(float(found['p_value']))}): {verdict}"


def against(value: float, refs: dict[str, Any]) -> list[str]:
    """`value` against the random and majority baselines: "above" or "NOT above" each one that is known."""
    known = {n: float(refs[n]) for n in ("random", "majority") if isinstance(refs.get(n), (int, float))}
    return [
        f"{'above' if value > ref else 'NOT above'} {n} ({show(ref)})" for n, ref in known.items() if math.isfinite(ref)
    ]


PUBLIC_BASELINES = "label_names,template,public"  # the built-in public-knowledge baselines, strongest bar first


def utility_line(utility: dict[str, Any], f1: tuple[tuple, tuple], results: dict[str, Any]) -> str | None:
    """The headline F1 against random, majority and real data (all its reference rows, so the figures below do not
    repeat it), and the other F1 where it is not above random or majority; public-knowledge baselines are other
    jobs, so a job given the private documents says how to run them into its sweep (one that was not is such a
    baseline itself)."""
    (_, key, label, refs), (_, other_key, other_label, other_refs) = f1
    if key not in utility:
        return None

    def found(pairs: tuple) -> dict[str, Any]:
        return {name: utility.get(path.split(".", 1)[1]) for name, path in pairs}

    words = against(float(utility[key]), found(refs))
    for name, text in (("real", "real data"), ("real at this size", "real data at this size")):
        if isinstance(found(refs).get(name), (int, float)):
            words.append(f"{text} {show(float(found(refs)[name]))}")
    if other_key in utility:
        flags = [w for w in against(float(utility[other_key]), found(other_refs)) if w.startswith("NOT")]
        words += [f"{other_label} {show(float(utility[other_key]))} {w}" for w in flags]
    line = f"Utility: {label} {show(float(utility[key]))}" + (f": {', '.join(words)}" if words else "")
    if results.get("reads_private") is False:
        return line + "; a public-knowledge baseline (given no private document)"
    return line + (
        f"; for its gain over public knowledge run python -m synbench generator={PUBLIC_BASELINES} eps=inf "
        f"seed={results.get('seed')} -m with this job's sweep=, then task=report"
    )


def audit_line(results: dict[str, Any]) -> str:
    """The audit's verdict with its ceiling, or, where the task ran none, the command that runs one."""
    audit = results.get("audit") or {}
    if "verdict_line" in audit:
        return f"Audit: {audit['verdict_line']}"
    if "eps_emp_lower" in audit:
        return f"Audit: eps_emp_lower {show(audit['eps_emp_lower'])} (no verdict recorded: re-run the audit)"
    return (
        f"Audit: not run by task={results.get('task')}; add `task=audit audit.mode=one_run` to this job's command "
        "line to measure it (docs/audit.md)"
    )


def revision_line(results: dict[str, Any]) -> str | None:
    """Where the dataset was read from its hub id at a revision that is not a commit (null, or a branch such as
    `main`): which commit that resolved to and the key that pins it; None for a pinned revision or a dataset read
    from a folder or prepared files (no hub revision applies)."""
    dataset = (results.get("config") or {}).get("dataset") or {}
    if "revision" not in dataset or pinned(dataset["revision"]):
        return None
    if dataset.get("data_dir") or dataset.get("train") or names_folder(str(dataset.get("path") or "")):
        return None
    resolved = results.get("source_revision")
    return (
        f"dataset {results.get('dataset')} read at an unpinned revision (resolved {resolved or 'unknown'}); pin "
        f"dataset.revision={resolved or '<a commit sha of the repository>'} to reproduce"
    )


def single_label(fidelity: dict[str, Any]) -> bool:
    """Whether no document on either side carries two labels (the `labels` metric's shares): every label
    cardinality is then 1 and their divergence 0 whatever the generator wrote, a figure that says nothing."""
    shares = [fidelity.get(f"label_multi_share_{side}") for side in ("real", "syn")]
    return all(isinstance(share, (int, float)) and share == 0 for share in shares)


def summary(results: dict[str, Any]) -> str:
    """What the job shows in plain words (disclosure, utility, audit), then the budget and the headline figures
    beside their reference rows."""

    def value(path: str) -> Any:
        section, _, key = path.partition(".")
        return results.get(section, {}).get(key) if key else results.get(section)

    eps = number(results.get("epsilon"))
    shown_eps = show(results.get("epsilon")) if eps is None else format_job_eps(eps, control_results(results))
    name = results.get("generator_name") or results.get("generator")
    lines = [
        f"{results.get('task')} {name} on {results.get('dataset')}: "
        f"eps={shown_eps}, "
        f"epsilon_spent={show(results.get('epsilon_spent'))}, delta={show(results.get('delta'))}"
    ]
    utility = results.get("utility", {})  # macro F1 first where micro F1 mostly counts the majority class
    f1 = (
        (F1_MACRO, F1_MICRO)
        if macro_f1_leads(utility.get("majority_f1"), utility.get("random_f1"))
        else (F1_MICRO, F1_MACRO)
    )
    plain = [
        revision_line(results),
        disclosure_line(results.get("disclosure") or {}),
        utility_line(utility, f1, results),
    ]
    if results.get("task") in ("benchmark", "audit"):
        plain.append(audit_line(results))
    lines += [f"  {line}" for line in plain if line]
    skip = {"label_cardinality_div"} if single_label(results.get("fidelity") or {}) else set()
    for section, key, label, refs in (f1[1], *HEADLINES):  # the headline F1 is in the utility line
        if key in results.get(section, {}) and key not in skip:
            ref = ", ".join(f"{name} {show(value(path))}" for name, path in refs if value(path) is not None)
            lines.append(f"  {label}: {show(results[section][key])}" + (f" ({ref})" if ref else ""))
    return "\n".join(lines)
