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
import re
import shlex
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Mapping

from synbench.core.revisions import names_folder, pinned
from synbench.job.record import Disclosure, Fidelity, JobRecord
from synbench.job.release import is_control_noise
from synbench.report.stats import format_job_eps, macro_f1_leads

# (record attribute path, label, reference rows as (label, attribute path)) of the figures a person reads first
Headline = tuple[str, str, tuple[tuple[str, str], ...]]
F1_MICRO: Headline = (
    "utility.f1_micro",
    "F1 micro",
    (
        ("random", "utility.random_f1"),
        ("majority", "utility.majority_f1"),
        ("real", "utility.real_f1"),
        ("real at this size", "utility.matched_real_f1"),
    ),
)
F1_MACRO: Headline = (
    "utility.f1_macro",
    "F1 macro",
    (
        ("random", "utility.random_f1_macro"),
        ("majority", "utility.majority_f1_macro"),
        ("real", "utility.real_f1_macro"),
        ("real at this size", "utility.matched_real_f1_macro"),
    ),
)
HEADLINES: tuple[Headline, ...] = (
    ("fidelity.mauve", "MAUVE", (("real vs real", "fidelity.mauve_ref"),)),
    (
        "fidelity.label_cardinality_div",
        "label-cardinality JS",
        (("real vs real", "fidelity.label_cardinality_div_ref"),),
    ),
    ("audit.auc", "attack AUC", ()),
    ("audit.eps_emp_lower", "eps_emp lower bound", (("nominal eps", "epsilon"),)),
    ("audit.eps_ceiling", "eps ceiling (a perfect attack's bound)", ()),
)


def show(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def disclosure_line(found: Disclosure | None) -> str | None:
    """The disclosure check in words: counts against the unseen documents' and the exact test; a count too small
    for the test to attribute, or groups it could not check, said as such (its `status`), never "not flagged";
    None if it did not run."""
    if found is None or found.private_reappear is None:
        return None
    counts = (
        f"Disclosure: {found.private_reappear} of {found.n_private} private documents reappear "
        f"(near-)verbatim; {found.unseen_reappear} of {found.n_unseen} unseen ones do"
    )
    if found.status == "could not check":
        return f"{counts}: could not check (too few documents hold text of their own for the test to flag any count)"
    if found.status == "below attribution":
        return f"{counts}: below what this test can attribute (it flags from {found.min_flaggable} documents up)"
    verdict = "FLAGGED: the release reproduces private documents" if found.flagged else "not flagged"
    return f"{counts} (one-sided exact test p={show(found.p_value)}): {verdict}"


def against(value: float, refs: dict[str, Any]) -> list[str]:
    """`value` against the random and majority baselines: "above" or "NOT above" each one that is known."""
    known = {n: float(refs[n]) for n in ("random", "majority") if isinstance(refs.get(n), (int, float))}
    return [
        f"{'above' if value > ref else 'NOT above'} {n} ({show(ref)})" for n, ref in known.items() if math.isfinite(ref)
    ]


PUBLIC_BASELINES = "label_names,template,public"  # the built-in public-knowledge baselines, strongest bar first
# The command-line keys that choose what ran privately (generator, budget, seed, task and its audits): the baselines'
# command sets its own; every other override (dataset, model, metrics, sweep, an experiment) is the job's and stays.
NOT_BASELINE_KEYS = frozenset(
    {
        "generator",
        "eps",
        "delta",
        "accountant",
        "privacy",
        "seed",
        "task",
        "attack",
        "audit",
        "model_attacks",
        "model_audit",
        "contamination",
        "hydra",
    }
)


@dataclass(frozen=True)
class JobCommand:
    """How a job was started from the command line, for the commands its summary prints: its overrides as Hydra
    kept them (`hydra.overrides.task`) and the sweep its results went to (an experiment may set it)."""

    overrides: tuple[str, ...]
    sweep: str


def override_key(override: str) -> str:
    """The top-level key an override sets: `generator` for `generator=x`, `+generator.lr=1`, `~audit` and
    `generator@x=y`; `hydra` for `hydra/launcher=joblib`."""
    return re.split(r"[./=@]", override.lstrip("+~"), maxsplit=1)[0]


def baseline_commands(record: JobRecord, command: JobCommand) -> str:
    """The two commands that put the public baselines beside this job in its report: the baselines at this job's
    seed on its data (its other overrides as given; a benchmark job's task options too, so the synthetic sets are
    as large), then the report of its sweep. Shell-quoted, to paste as printed."""
    kept = [
        o
        for o in command.overrides
        if override_key(o) not in NOT_BASELINE_KEYS
        or (record.task == "benchmark" and o.lstrip("+").startswith("task."))
    ]
    run = [*kept, f"generator={PUBLIC_BASELINES}", "eps=inf", f"seed={record.seed}", "-m"]
    where = [f"sweep={command.sweep}", *(o for o in command.overrides if override_key(o) == "output_root")]
    app = ["python", "-m", "synbench"]
    return f"`{shlex.join([*app, *run])}`, then `{shlex.join([*app, 'task=report', *where])}`"


def figures(record: JobRecord, refs: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """The reference rows' figures by label, read from the record's attributes (None where the job wrote none)."""
    return {name: attrgetter(path)(record) for name, path in refs}


def utility_line(record: JobRecord, f1: tuple[Headline, Headline], command: JobCommand | None) -> str | None:
    """The headline F1 against random, majority and real data (all its reference rows, so the figures below do not
    repeat it), and the other F1 where it is not above random or majority; public-knowledge baselines are other
    jobs, so a job given the private documents prints the commands that run them into its sweep (one that was not
    is such a baseline itself), or, started without a command line, names them."""
    (path, label, refs), (other_path, other_label, other_refs) = f1
    value, other = attrgetter(path)(record), attrgetter(other_path)(record)
    if value is None:
        return None
    found = figures(record, refs)
    words = against(float(value), found)
    for name, text in (("real", "real data"), ("real at this size", "real data at this size")):
        if isinstance(found[name], (int, float)):
            words.append(f"{text} {show(float(found[name]))}")
    if other is not None:
        flags = [w for w in against(float(other), figures(record, other_refs)) if w.startswith("NOT")]
        words += [f"{other_label} {show(float(other))} {w}" for w in flags]
    line = f"Utility: {label} {show(float(value))}" + (f": {', '.join(words)}" if words else "")
    if record.reads_private is False:
        return line + "; a public-knowledge baseline (given no private document)"
    if command is None:
        return line + (
            f"; for its gain over public knowledge run generator={PUBLIC_BASELINES} eps=inf seed={record.seed} "
            "on its data into its sweep, then task=report"
        )
    return line + f"; for its gain over public knowledge run {baseline_commands(record, command)}"


def audit_line(record: JobRecord) -> str:
    """The audit's verdict with its ceiling, or, where the task ran none, the command that runs one."""
    audit = record.audit
    if audit.verdict_line is not None:
        return f"Audit: {audit.verdict_line}"
    if audit.eps_emp_lower is not None:
        return f"Audit: eps_emp_lower {show(audit.eps_emp_lower)} (no verdict recorded: re-run the audit)"
    return (
        f"Audit: not run by task={record.task}; add `task=audit audit.mode=one_run` to this job's command "
        "line to measure it (docs/audit.md)"
    )


def revision_line(record: JobRecord) -> str | None:
    """Where the dataset was read from its hub id at a revision that is not a commit (null, or a branch such as
    `main`): which commit that resolved to and the key that pins it; None for a pinned revision or a dataset read
    from a folder or prepared files (no hub revision applies)."""
    dataset = record.config["dataset"] if isinstance(record.config.get("dataset"), Mapping) else {}
    if "revision" not in dataset or pinned(dataset["revision"]):
        return None
    if dataset.get("data_dir") or dataset.get("train") or names_folder(str(dataset.get("path") or "")):
        return None
    resolved = record.source_revision
    return (
        f"dataset {record.dataset} read at an unpinned revision (resolved {resolved or 'unknown'}); pin "
        f"dataset.revision={resolved or '<a commit sha of the repository>'} to reproduce"
    )


def single_label(fidelity: Fidelity) -> bool:
    """Whether no document on either side carries two labels (the `labels` metric's shares): every label
    cardinality is then 1 and their divergence 0 whatever the generator wrote, a figure that says nothing."""
    return fidelity.label_multi_share_real == 0 and fidelity.label_multi_share_syn == 0


def summary(record: JobRecord, command: JobCommand | None = None) -> str:
    """What the job shows in plain words (disclosure, utility, audit), then the budget and the headline figures
    beside their reference rows; `command`: how the job was started (None: not from the command line)."""
    eps = record.epsilon
    shown_eps = show(eps) if eps is None else format_job_eps(eps, is_control_noise(record.noise))
    lines = [
        f"{record.task} {record.generator_name or record.generator} on {record.dataset}: "
        f"eps={shown_eps}, "
        f"epsilon_spent={show(record.epsilon_spent)}, delta={show(record.delta)}"
    ]
    utility = record.utility  # macro F1 first where micro F1 mostly counts the majority class
    f1 = (F1_MACRO, F1_MICRO) if macro_f1_leads(utility.majority_f1, utility.random_f1) else (F1_MICRO, F1_MACRO)
    plain = [revision_line(record), disclosure_line(record.disclosure), utility_line(record, f1, command)]
    if record.task in ("benchmark", "audit"):
        plain.append(audit_line(record))
    lines += [f"  {line}" for line in plain if line]
    skip = {"fidelity.label_cardinality_div"} if single_label(record.fidelity) else set()
    for path, label, refs in (f1[1], *HEADLINES):  # the headline F1 is in the utility line
        value = attrgetter(path)(record)
        if value is not None and path not in skip:
            ref = ", ".join(f"{name} {show(v)}" for name, v in figures(record, refs).items() if v is not None)
            lines.append(f"  {label}: {show(value)}" + (f" ({ref})" if ref else ""))
    return "\n".join(lines)
