"""The audit table: attack strength and empirical epsilon next to the nominal one, with a verdict that says what
the audit could have seen.

A violation is an audit whose evidence rejects the nominal claim: the point
estimate `eps_emp` alone is not evidence, the lower bound `eps_emp_lower`
and its p-value `p_value` (of the test of the claim) are. A row over S seeds
tests each seed at alpha / S (Bonferroni: `rejected`), so its verdict fails
with probability at most alpha however many seeds ran, and says so and which
seed rejected. A row that rejects nothing is `consistent` only if its design
could have rejected: `eps_ceiling` (beside the bound) is what a perfect
attack would have certified, and `p_value_floor` its p-value of the claim,
tested at the same alpha / S; otherwise it is `inconclusive`, with the
ceiling and the design size (`n_needed`) a perfect attack would need. "no"
is never the verdict: it reads as a pass where the audit could not have
seen a violation. A nominal epsilon of ∞ makes no claim, nor does a declared
non-private control (`copy`) at any epsilon, so nothing can violate those.
An audit with `canary_repeats` = k > 1 makes each canary a group of k
copies: its canary trials are tested against the group claim (k eps,
delta sum_{i<k} e^{i eps}) and its outlier trials against (eps, delta), two
claims per seed in the Bonferroni count. An audit with targets of both kinds
gets one row per kind under its own (`outliers`, `canaries`), with the claim
each kind was tested against, and one with `audit.repeats` > 1 shows the mean
and 95% interval of its bound over the repeats. k_subsets audits also show
the Clopper-Pearson bound on the pooled run x target ROC, labelled
conditional on independent trials: their `eps_emp_lower` is the pair game's,
which needs no such assumption.

An audit that ran several attacks gets a per-attack table: each attack's AUC
and bound beside the combined bound and the attack it chose. Each attack's
bound holds for that attack alone; the largest of several, picked after
seeing them, does not, so a violation rests on the combined bound (which
pays for the choice). A one-run audit with repeats pools its runs into one
game (`audit.pooled.<key>`): that bound is evidence like the headline one
and is marked the same way, beside the mean of the runs' own bounds, which
says how stable one run is and is no bound. The audit table and the pooled
table then both test the row's claim, so each tests at half its level
(`verdict_tables`): the row's one verdict holds at alpha.

The paper reads violations in the low-FPR region FPR in [0.1, 0.2]: the
empirical epsilon of the ROC points there (TPR 0.38 at FPR 0.1 is 1.34). A
second table gives that reading from the audit's `tpr_at_fpr_<f>` for the
grid's f in the region, as an estimate beside the bound, not as evidence,
with how often it exceeds eps for a mechanism exactly eps-DP at the job's
numbers of trials (`audit.paper_reading_false_alarm`, simulated by the job).
"""

from __future__ import annotations

import math
import re
from typing import Sequence

import numpy as np
import pandas as pd

from synbench.report.load import COMPLETE, CONFIGURED_CONFIDENCE, ROC_FILE, SETUP, task_jobs
from synbench.report.stats import format_eps
from synbench.report.table import (
    NOT_MEASURED,
    Cell,
    Group,
    Table,
    disclosure_cell,
    groups,
    has_disclosure,
    markers,
    metric_cell,
    row_name,
    sort_jobs,
)

TASK = "audit"
KEYS = ["dataset", "generator", "audit.mode", "epsilon", SETUP]  # a row: one setup (config) of its generator
LOWER = "audit.eps_emp_lower"
CEILING = "audit.eps_ceiling"  # the most the audit's design could certify with a perfect attack
# (keys under a claim's prefix) the p-value of the claim the audit's own test gives perfect scores, which "consistent"
# rests on, and the smallest p-value any attack could reach (results written before the first existed)
PERFECT, FLOOR = "p_value_perfect", "p_value_floor"
PERFECT_BOUND = "audit.eps_perfect"  # what the audit's own test certifies for perfect scores
LEAK, LEAK_POWER = "audit.detectable_leak", "audit.detectable_leak_power"  # a consistent audit's planted-leak power
NEEDED = "audit.n_needed"  # the design size a perfect attack would need, for an inconclusive audit
# what n_needed counts (targets or runs), as the audit wrote it beside n_needed: the report reads the unit from the
# results file rather than keep the audit's table
NEEDED_UNIT = "audit.n_needed_unit"
TPR_PREFIX = "audit.tpr_at_fpr_"
KINDS = ("outliers", "canaries")
POOLED = "pooled"  # the pooled one-run game's figures: `audit.pooled.<key>`
CHOSEN = "audit.attack_chosen"  # which attack the combined bound's held-out part chose (text)
REPEATS = "audit.repeats"  # written only when the job ran more than one audit
GROUPS = "audit.canary_repeats"  # copies per canary: more than 1 makes each canary a group with its own claim
FALSE_ALARM = "audit.paper_reading_false_alarm"  # how often the paper's reading "violates" an exactly eps-DP mechanism
PER_KIND = (
    "audit.auc",
    "audit.eps_emp",
    "audit.gdp_mu_lower",
    LOWER,
    CEILING,
    "audit.p_value",
    "audit.claim_epsilon",
)  # the keys the audit summary also reports per target kind
HEADERS = {
    "audit.auc": "AUC",
    "audit.eps_emp_lower_holdout": "held-out bound",
    "audit.eps_emp_lower_bonferroni": "Bonferroni bound",
    "audit.gdp_mu_lower": "GDP μ bound",
    LOWER: "eps_emp_lower",
    CEILING: "eps_ceiling",
    "audit.p_value": "p-value of the claim",
    "audit.claim_epsilon": "claim ε",
    "audit.eps_emp_lower_conditional": "pooled-ROC bound (conditional on independent trials)",
}


def audit_jobs(frame: pd.DataFrame) -> pd.DataFrame:
    return task_jobs(frame, TASK).fillna({"audit.mode": "?"}) if "audit.mode" in frame else frame.iloc[:0]


def tpr_columns(jobs: pd.DataFrame) -> dict[str, float]:
    """The `tpr_at_fpr_<f>` columns and their f, by f; not the repeats' `tpr_at_fpr_<f>_mean` and interval ends."""
    found = (re.fullmatch(re.escape(TPR_PREFIX) + r"(\d+(?:\.\d*)?(?:e-?\d+)?)", c) for c in jobs.columns)
    return dict(sorted(((m[0], float(m[1])) for m in found if m), key=lambda item: item[1]))


def metric_columns(jobs: pd.DataFrame) -> list[str]:
    """AUC, TPR at each low FPR (numerically) and the point estimate of epsilon: the cells before the bound's."""
    return ["audit.auc", *tpr_columns(jobs), "audit.eps_emp"]


DETAIL_COLUMNS = [
    "audit.auc",
    "audit.eps_emp",
    "audit.eps_emp_lower_holdout",
    "audit.eps_emp_lower_bonferroni",
    "audit.gdp_mu_lower",
    LOWER,
    CEILING,
    "audit.claim_epsilon",
    "audit.p_value",
    "audit.eps_emp_lower_conditional",
]


def column_header(column: str) -> str:
    if column.startswith(TPR_PREFIX):
        return f"TPR@FPR {column[len(TPR_PREFIX) :]}"
    return HEADERS.get(column, column.split(".", 1)[1])


def repeats_cell(group: Group) -> Cell:
    """eps_emp_lower's mean and 95% interval over an audit's repeats (of the first seed that has them)."""
    done = group.complete
    if "audit.eps_emp_lower_mean" not in done or done["audit.eps_emp_lower_mean"].isna().all():
        return Cell("—")
    job = done[done["audit.eps_emp_lower_mean"].notna()].iloc[0]
    return Cell(
        f"{job['audit.eps_emp_lower_mean']:.2f} [{job['audit.eps_emp_lower_ci_low']:.2f}, "
        f"{job['audit.eps_emp_lower_ci_high']:.2f}] ({int(job['audit.repeats'])} audits)"
    )


def claim_tests(group: Group) -> list[tuple[str, str]]:
    """(label, column prefix) of each claim a row's verdict tests: the headline one; or, for an audit whose canaries
    are groups of `canary_repeats` > 1 copies beside outlier targets, the outliers' claim (eps, delta) and the
    canary groups' (k eps, delta sum_{i<k} e^{i eps}), each with its own p-value."""
    copies = group.complete.get(GROUPS, pd.Series(dtype=float)).fillna(1)
    kinds = [("outliers", "audit.outliers."), ("canary groups", "audit.canaries.")]
    if (copies > 1).any() and has_figures(group, [f"{prefix}p_value" for _, prefix in kinds]):
        return kinds
    return [("", "audit.")]


def rejected(p_values: np.ndarray, confidence: float) -> np.ndarray:
    """Which of a row's tests reject their claim: p <= alpha / n for the n tests (seeds x claims) of the row
    (Bonferroni), so the row's verdict fails with probability at most alpha = 1 - confidence however many seeds
    ran. NaN (no p-value) rejects nothing."""
    p = np.asarray(p_values, dtype=float)
    return np.nan_to_num(p, nan=1.0) <= (1 - confidence) / max(p.size, 1)


def row_level(done: pd.DataFrame, tables: int) -> float:
    """The confidence a row's tests share before `rejected` splits it over them: 1 - alpha / `tables`, alpha = 1 -
    the level the jobs were configured at (`load.CONFIGURED_CONFIDENCE`; in a file without it, the level its audit
    recorded). The configured level comes first because a pooled job records its runs' level already halved for
    its two verdicts, which `tables` counts here."""
    recorded = done.get("audit.confidence", pd.Series(0.95, index=done.index))
    configured = done.get(CONFIGURED_CONFIDENCE, pd.Series(np.nan, index=done.index)).fillna(recorded)
    return 1 - (1 - float(configured.dropna().min())) / tables


def verdict(group: Group, eps: float, tables: int = 1) -> tuple[Cell, bool]:
    """The verdict cell of a row and whether the row's claim is rejected: every seed's and claim's p-value tested
    at alpha / (seeds x claims x `tables`) (`rejected`), the cell saying which seed and claim, and at what level; a
    row that rejects nothing is consistent or inconclusive by its perfect attack's p-values (`not_rejected`).

    `tables` is how many of the report's tables test the row's claim on figures of their own (`verdict_tables`:
    2 for a one-run audit whose pooled game the pooled table tests too), so the one verdict the report draws from
    them holds at alpha."""
    done = group.complete
    if done.empty:
        return group.unfinished_cell(), False
    if math.isinf(eps):
        return Cell("n/a (ε = ∞ claims nothing)"), False
    if done["non_private_control"].astype(bool).any():
        return Cell("n/a (non-private control)"), False
    tests = claim_tests(group)
    columns = [f"{prefix}p_value" for _, prefix in tests]
    level = row_level(done, tables)
    if not has_figures(group, columns):
        grouped = (done.get(GROUPS, pd.Series(dtype=float)).fillna(1) > 1).any()
        if len(done) == 1 and not grouped and LOWER in done and done[LOWER].notna().all():  # one test: the bound's
            if bool((done[LOWER] > eps).all()):
                return Cell("VIOLATION", "violation"), True
            return not_rejected(group, eps, tests, level, "", tables), False
        return Cell("not tested (results without p-values: re-run the audit)", "missing"), False
    p = done.reindex(columns=columns).to_numpy(float)  # (seeds, claims)
    hits = rejected(p, level)
    n = p.size * tables
    tested = f"{n} tests (seeds x claims{' x tables' if tables > 1 else ''}), each at α/{n}" if n > 1 else ""
    if not hits.any():
        return not_rejected(group, eps, tests, level, tested, tables), False
    seeds = done["seed"].tolist() if "seed" in done else list(range(len(done)))
    which = [
        f"{label + ', ' if label else ''}seed {seeds[i]}" for i, j in zip(*np.nonzero(hits)) for label in [tests[j][0]]
    ]
    detail = f": {'; '.join(which)}" if len(tests) > 1 or len(done) > 1 else ""
    return Cell("VIOLATION" + detail + (f" ({tested})" if tested else ""), "violation"), True


def leak_words(done: pd.DataFrame) -> str:
    """What a consistent row could have seen: the largest over its seeds of the smallest planted leak each seed's
    test certified in most draws (`audit.detectable_leak`, synbench.audit.power), so the words hold for every seed
    that measured it; nothing where none did (results from before it, or seeds whose own verdict was not
    consistent)."""
    measured = done[done[LEAK_POWER].notna()] if LEAK_POWER in done else done.iloc[:0]
    if measured.empty:
        return ""
    if measured.get(LEAK, pd.Series(np.nan, index=measured.index)).isna().any():
        return "; not even a leak of every target would be certified in most draws: no evidence of privacy"
    share = float(measured[LEAK].max())
    return f"; a leak of {share:.0%} of the targets would have been certified, a smaller one need not"


def not_rejected(
    group: Group, eps: float, tests: list[tuple[str, str]], level: float, tested: str, tables: int = 1
) -> Cell:
    """The verdict of a row whose tests reject nothing: consistent when perfect scores' p-value through the audit's
    own test (`p_value_perfect`; `p_value_floor` in older results) would have been rejected in some test at the
    row's level (alpha / n for its n tests, seeds x claims x `tables`), else inconclusive, with what perfect scores
    certify, the claim it tests and the size a perfect attack would need."""
    done = group.complete
    key = PERFECT if any(f"{prefix}{PERFECT}" in done for _, prefix in tests) else FLOOR
    floors = done.reindex(columns=[f"{prefix}{key}" for _, prefix in tests]).to_numpy(float)
    if np.isnan(floors).all():
        return Cell("not rejected; no ceiling recorded (re-run the audit)", "missing")
    if rejected(floors, level).any():
        return Cell("consistent" + (f" ({tested})" if tested else "") + leak_words(done))
    top = float(done.get(PERFECT_BOUND if key == PERFECT else CEILING, pd.Series(dtype=float)).max())
    reach = "a perfect attack certifies" if key == PERFECT else "ceiling"
    claims = done.get("audit.claim_epsilon", pd.Series(dtype=float)).dropna()
    claim = float(claims.max()) if len(claims) else eps
    name = f"ε {claim:g}" + (" (group claim)" if claim != eps else "")
    if top > claim:  # each seed's design could certify the claim at alpha, none at alpha / n
        return Cell(f"inconclusive ({reach} {top:.2f} > {name} per seed, not at the row's α/{floors.size * tables})")
    needed = done.get(NEEDED, pd.Series(dtype=float)).max()
    units = done.get(NEEDED_UNIT, pd.Series(dtype=object)).dropna()
    if units.empty:  # a file written before the audit searched a size holds neither n_needed nor its unit
        size = "no design size recorded (re-run the audit)"
    elif np.isfinite(needed):
        size = f"needs {int(needed):,} {units.iloc[0]}"
    else:
        size = "no design size searched would do"
    return Cell(f"inconclusive ({reach} {top:.2f} ≤ {name}; {size})")


def exceeds(group: Group, eps: float, column: str) -> Cell:
    """Whether a point estimate `column` is above the nominal epsilon, and in how many seeds: the paper's reading,
    which is no test (`paper_region_note`)."""
    if group.complete.empty:
        return group.unfinished_cell()
    if math.isinf(eps):
        return Cell("n/a (ε = ∞ claims nothing)")
    if column not in group.complete or group.complete[column].isna().all():
        return NOT_MEASURED
    n, hits = len(group.complete), int((group.complete[column] > eps).sum())
    return Cell("yes" + (f": {hits} of {n} seeds" if n > 1 else "")) if hits else Cell("no")


def head_cells(key: tuple, group: Group, jobs: pd.DataFrame) -> tuple[Cell, ...]:
    """A row's first cells: dataset, generator with its markers (and its setup where `jobs` hold another), audit
    mode, nominal epsilon."""
    dataset, _, mode, eps, _ = key
    name = row_name(jobs, KEYS, key)
    return Cell(str(dataset)), Cell(f"{name}{markers(group.all)}"), Cell(str(mode)), Cell(format_eps(eps))


def verdict_tables(group: Group) -> int:
    """How many tables test a row's claim on figures of their own: the audit table, and the pooled table where the
    row's one-run audits pooled their runs (`pooled_group`)."""
    return 2 if pooled_group(group) is not None else 1


def bound_cells(group: Group, eps: float, confidence: float, tables: int = 1) -> tuple[Cell, Cell, Cell]:
    """The group's eps_emp_lower cell, marked when it is a violation, its ceiling, and the verdict (at the level
    of the row's `tables`: `verdict`)."""
    found, violated = verdict(group, eps, tables)
    bound = metric_cell(group, LOWER, confidence)[0]
    ceiling = metric_cell(group, CEILING, confidence)[0]
    return (Cell(bound.text, "violation") if violated else bound), ceiling, found


def audit_table(frame: pd.DataFrame, confidence: float) -> Table | None:
    """One row per dataset x generator x audit mode x nominal epsilon x setup, over seeds, with the row's disclosure
    check where any audit ran it (`table.disclosure_cell`, corrected over the row's seeds)."""
    jobs = audit_jobs(frame)
    if jobs.empty:
        return None
    columns = metric_columns(jobs)
    checked = bool(has_disclosure(jobs).any())
    rows = [
        (
            *head_cells(key, group, jobs),
            group.seeds_cell(),
            *(metric_cell(group, c, confidence)[0] for c in columns),
            *bound_cells(group, key[3], confidence, verdict_tables(group)),
            *((disclosure_cell(group, confidence),) if checked else ()),
        )
        for key, group in groups(jobs, KEYS)
    ]
    head = ("dataset", "generator", "mode", "nominal ε", "seeds")
    bound = tuple(column_header(c) for c in (LOWER, CEILING)) + ("verdict",) + (("disclosure",) if checked else ())
    return Table(head + tuple(column_header(c) for c in columns) + bound, tuple(rows), "privacy audit")


PAPER_REGION = (0.1, 0.2)  # the paper's low-FPR region, where it reads violations
PAPER_EPS = "audit.eps_paper_region"


def region_columns(jobs: pd.DataFrame) -> dict[str, float]:
    """The `tpr_at_fpr_<f>` columns with f in the paper's region and their f, by f."""
    low, high = PAPER_REGION
    return {c: f for c, f in tpr_columns(jobs).items() if low <= f <= high}


def point_epsilon(fpr: np.ndarray, tpr: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """max(log((TPR - delta) / FPR), log((1 - delta - FPR) / (1 - TPR)), 0) per ROC point.

    The definition of synbench.audit.epsilon.empirical_epsilon (a test holds
    them equal), written here because the report imports no audit code: it
    reads results.json files only.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        upper = np.where(tpr - delta > 0, np.log(tpr - delta) - np.log(fpr), -np.inf)
        lower = np.where(1 - delta - fpr > 0, np.log(1 - delta - fpr) - np.log(1 - tpr), -np.inf)
    return np.maximum(np.maximum(upper, lower), 0.0)


def paper_region_epsilon(jobs: pd.DataFrame) -> pd.Series:
    """Per job, the largest empirical epsilon of its ROC points at the grid's FPRs f in [0.1, 0.2], at its delta.

    `tpr_at_fpr_<f>` is the best TPR among thresholds with FPR at most f, so
    taking f itself as the FPR gives an epsilon no larger than that point's
    own: the reading never overstates. NaN where the job has no such figure.
    """
    delta = jobs["delta"].fillna(0.0).to_numpy(float) if "delta" in jobs else np.zeros(len(jobs))
    region = region_columns(jobs)
    tpr = np.array([jobs[c].to_numpy(float) for c in region]).reshape(-1, len(jobs))
    fpr = np.array(list(region.values()))[:, None]
    eps = np.where(np.isnan(tpr), -np.inf, point_epsilon(fpr, np.nan_to_num(tpr), delta))
    return pd.Series(np.where(np.isnan(tpr).all(0), np.nan, eps.max(0, initial=-np.inf)), index=jobs.index)


def paper_region_table(frame: pd.DataFrame, confidence: float) -> Table | None:
    """The paper's reading: TPR at FPR 0.1 and 0.2, the epsilon those points imply, and whether it exceeds the
    nominal."""
    jobs = audit_jobs(frame)
    columns = region_columns(jobs)
    if jobs.empty or not columns:
        return None
    jobs = jobs.assign(**{PAPER_EPS: paper_region_epsilon(jobs)})
    rows = [
        (
            *head_cells(key, group, jobs),
            group.seeds_cell(),
            *(metric_cell(group, c, confidence)[0] for c in [*columns, PAPER_EPS]),
            exceeds(group, key[3], PAPER_EPS),
            metric_cell(group, FALSE_ALARM, confidence)[0],
        )
        for key, group in groups(jobs, KEYS)
    ]
    head = ("dataset", "generator", "mode", "nominal ε", "seeds", *map(column_header, columns), "ε at FPR 0.1–0.2")
    return Table(
        head + ("above nominal ε", "share above ε if exactly ε-DP"),
        tuple(rows),
        "privacy audit: the paper's reading (FPR in [0.1, 0.2])",
    )


def paper_region_note() -> str:
    """What the paper's reading is, and why it is not the evidence the main table's bound is."""
    return (
        "The paper reads violations in the low-FPR region FPR in [0.1, 0.2]: ε at FPR 0.1–0.2 is the largest "
        "empirical ε, max(log((TPR - δ) / FPR), log((1 - δ - FPR) / (1 - TPR))), of the ROC points at the grid's FPRs "
        "there (TPR 0.38 at FPR 0.1 gives 1.34). It is a point estimate without confidence, reported to compare with "
        "the paper; a violation claim rests on eps_emp_lower in the table above. The last column calibrates it: the "
        "share of 2,000 simulated audits of a mechanism exactly ε-DP at the nominal ε (randomised response with a "
        "uniform tie-breaker, whose ROC is the ε-DP boundary), with the job's member and non-member trials, whose "
        "reading exceeds ε (synbench.audit.paper_reading): for such a mechanism the reading is above ε about half "
        'the time or more, so "above nominal ε" is no evidence.'
    )


def has_figures(group: Group, columns: Sequence[str]) -> bool:
    """Whether any finished job of the group has a value in any of `columns`."""
    return not group.complete.reindex(columns=list(columns)).isna().all(axis=None)


def sub_group(group: Group, part: str, columns: Sequence[str]) -> Group | None:
    """The group with the `audit.<part>.<key>` figures in place of the plain `audit.<key>` `columns`, or None when
    no finished job has any of them.

    A target kind's or the pooled game's figures then fill the same cells,
    and get the same violation verdict, as the headline ones.
    """
    moved = {f"audit.{part}.{c.split('.', 1)[1]}": c for c in columns}
    if not has_figures(group, list(moved)):
        return None

    def rename(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.drop(columns=[c for c in columns if c in frame]).rename(columns=moved)

    return Group(rename(group.complete), rename(group.incomplete))


def pooled_group(group: Group) -> Group | None:
    """The group with the pooled one-run game's figures (`audit.pooled.<key>`) as its own, None without them."""
    prefix = f"audit.{POOLED}."
    return sub_group(group, POOLED, [f"audit.{c[len(prefix) :]}" for c in group.complete if c.startswith(prefix)])


def audit_detail_table(frame: pd.DataFrame, confidence: float) -> Table | None:
    """The bounds behind eps_emp_lower, the GDP bound, one row per target kind, and the repeats' interval."""
    jobs = audit_jobs(frame)
    if jobs.empty or "audit.eps_emp_lower_holdout" not in jobs:
        return None
    rows = []
    for key, group in groups(jobs, KEYS):
        head = head_cells(key, group, jobs)
        rows.append(
            (
                *head,
                Cell("all"),
                group.seeds_cell(),
                *(metric_cell(group, c, confidence)[0] for c in DETAIL_COLUMNS),
                repeats_cell(group),
            )
        )
        for kind in KINDS:
            part = sub_group(group, kind, PER_KIND)
            if part is not None:
                cells = [metric_cell(part, c, confidence)[0] if c in PER_KIND else Cell("—") for c in DETAIL_COLUMNS]
                rows.append((*head, Cell(kind), part.seeds_cell(), *cells, Cell("—")))
    titles = ("dataset", "generator", "mode", "nominal ε", "targets", "seeds")
    return Table(
        titles + tuple(column_header(c) for c in DETAIL_COLUMNS) + ("repeats: eps_emp_lower",),
        tuple(rows),
        "privacy audit: bounds, target kinds, repeats",
    )


def attack_names(jobs: pd.DataFrame) -> list[str]:
    """The attacks with figures of their own in a finished job, in the order the results list them.

    The audit writes `audit.<attack>.<key>` only for a job that ran several
    attacks; the target kinds and the pooled game share that pattern and are
    no attacks.
    """
    done = jobs[jobs["status"] == COMPLETE]
    found = (re.fullmatch(r"audit\.([^.]+)\.eps_emp_lower", c) for c in done.columns if done[c].notna().any())
    return [m[1] for m in found if m and m[1] not in (*KINDS, POOLED)]


def repeats_of(group: Group) -> int:
    """How many audits the group's finished jobs ran (at most)."""
    found = group.complete.get(REPEATS, pd.Series(dtype=float)).dropna()
    return int(found.max()) if len(found) else 1


def chosen_cell(group: Group) -> Cell:
    """The attack the combined bound's held-out part chose: one name, or each name with its share of the seeds."""
    if group.complete.empty:
        return group.unfinished_cell()
    chosen = group.complete.get(CHOSEN, pd.Series(dtype=object)).dropna()
    counts = chosen.value_counts()
    if counts.empty:
        return NOT_MEASURED
    if len(counts) == 1:
        return Cell(str(counts.index[0]))
    return Cell(", ".join(f"{name} ({n} of {len(chosen)})" for name, n in sorted(counts.items())))


def attack_table(frame: pd.DataFrame, confidence: float) -> Table | None:
    """Each attack's AUC and eps_emp_lower beside the combined bound and the chosen attack, for the audits that ran
    several attacks: a row for the (first) audit and one for the pooled game of a one-run audit with repeats.

    None when no job ran more than one attack.
    """
    jobs = audit_jobs(frame)
    names = attack_names(jobs)
    if not names:
        return None
    columns = [c for name in names for c in (f"audit.{name}.auc", f"audit.{name}.eps_emp_lower")]
    rows = []
    for key, group in groups(jobs, KEYS):
        runs, tables = repeats_of(group), verdict_tables(group)
        first = "one audit" if runs == 1 else f"first of {runs} audits"
        for game, part in ((first, group), (f"pooled, {runs} runs", pooled_group(group))):
            if part is not None and has_figures(part, columns):
                bound = bound_cells(part, key[3], confidence, tables)[0]
                cells = (metric_cell(part, c, confidence)[0] for c in columns)
                head = head_cells(key, group, jobs)
                rows.append((*head, Cell(game), part.seeds_cell(), *cells, bound, chosen_cell(part)))
    titles = ("dataset", "generator", "mode", "nominal ε", "audit", "seeds")
    attacks = tuple(f"{name} {header}" for name in names for header in ("AUC", "eps_emp_lower"))
    return Table(
        titles + attacks + ("combined eps_emp_lower", "attack chosen"), tuple(rows), "privacy audit: per attack"
    )


def attack_note() -> str:
    """Why the violation mark of the per-attack table rests on the combined bound."""
    return (
        "Each attack's eps_emp_lower is a bound for that attack alone, as if it were the only one run; the largest "
        "of several, read after seeing them, is not. The combined eps_emp_lower pays for the choice (Bonferroni over "
        "the attacks, or the attack chosen on held-out targets), so a violation (marked) rests on it. The main "
        "table's other figures are the chosen attack's."
    )


def pooled_table(frame: pd.DataFrame, confidence: float) -> Table | None:
    """The pooled one-run game's eps_emp_lower beside the mean and interval of the runs' own bounds, for one-run
    audits with `audit.repeats` > 1; None when no job pooled its runs."""
    rows = []
    jobs = audit_jobs(frame)
    for key, group in groups(jobs, KEYS):
        pooled = pooled_group(group)
        if pooled is not None:
            rows.append(
                (
                    *head_cells(key, group, jobs),
                    pooled.seeds_cell(),
                    metric_cell(group, REPEATS, confidence)[0],
                    metric_cell(pooled, "audit.n_trials", confidence)[0],
                    repeats_cell(group),
                    *bound_cells(pooled, key[3], confidence, verdict_tables(group)),
                )
            )
    if not rows:
        return None
    titles = ("dataset", "generator", "mode", "nominal ε", "seeds", "runs pooled", "pooled trials")
    return Table(
        titles + ("per-run eps_emp_lower: mean [interval]", "pooled eps_emp_lower", "pooled eps_ceiling", "verdict"),
        tuple(rows),
        "privacy audit: pooled one-run game",
    )


def pooled_note() -> str:
    """Which of the pooled table's numbers is a bound, and what a claim on two bounds costs."""
    return (
        "A one-run audit with audit.repeats = R pools the guesses of its R independent runs into one game of all "
        "their trials (Steinke, Nasr & Jagielski's analysis holds for the pool): the pooled eps_emp_lower is a "
        "bound at the audit's confidence, and above the nominal ε a violation (marked). The per-run mean and "
        "interval say how stable one run's bound is; the mean is no bound. The main table's bound is the first "
        "run's, a second test on part of the same trials, so the report tests each of the two at half the row's "
        "level (Bonferroni over the two tables, beside the row's seeds and claims): the row's one verdict, whichever "
        "table's test rejects, holds at the audit's confidence."
    )


def bound_note(frame: pd.DataFrame) -> str:
    """What eps_emp_lower is, at the confidence level(s) the audits used."""
    levels = sorted(audit_jobs(frame).get("audit.confidence", pd.Series(dtype=float)).dropna().unique())
    level = " / ".join(f"{c:.0%}" for c in levels) or "stated"
    return (
        f"eps_emp_lower is a one-sided {level} lower bound on epsilon, the larger of a held-out bound (choice on a "
        "quarter of the targets, one test on the rest) and a Bonferroni bound (every choice tested), each at half "
        "the failure probability: Steinke, Nasr & Jagielski's binomial bound on the guesses, in one_run mode on the "
        "run's coins, in k_subsets mode on the pair game (which run of a pair held each target; valid without "
        "independence between a run's trials). A violation is a p-value of the nominal claim at most α / n for "
        "the row's n tests (seeds, and canary groups' claim beside the outliers'): Bonferroni over seeds, so more "
        "seeds do not raise the false-alarm rate. eps_ceiling is the bound a perfect attack (every member ranked "
        "above every non-member) gets from the same design and tests: a row that rejects nothing is consistent "
        "when that perfect attack would have been rejected at the row's level, and inconclusive when not (its "
        "design could not have shown a violation, whatever the generator does); the cell then gives the number "
        "of targets (one_run) or runs (k_subsets) a perfect attack would need. The pooled-ROC bound of k_subsets "
        "audits (detail table) is "
        "conditional on independent trials and is no evidence. eps_emp is an "
        "estimate (cross-fitted: the threshold chosen on half the targets, measured on the other half), not "
        "evidence. The GDP μ bound (Mahloujifar, Melis & Chaudhuri in one_run mode) assumes nothing, but the ε it "
        "implies (gdp_eps_lower in results.json) is a bound only for mechanisms with a Gaussian privacy profile."
    )


def roc_images(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """(path of a finished audit's ROC image relative to the sweep folder, caption), in table order."""
    jobs = audit_jobs(frame)
    done = sort_jobs(jobs[(jobs["status"] == COMPLETE) & jobs["has_roc"]], KEYS + ["seed"])
    return [
        (
            f"{job.job}/{ROC_FILE}",
            f"{job.generator} on {job.dataset}, {job['audit.mode']}, "
            f"nominal ε={format_eps(job.epsilon)}, seed {int(job.seed)}",
        )
        for _, job in done.iterrows()
    ]
