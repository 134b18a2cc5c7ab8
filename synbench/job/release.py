"""What a job releases, field by field: the allow-list of `results.json` and the filters that enforce it.

The synthetic corpus, `results.json` and the tracker run are the release.
Each field is a public plan value (sample rate, planned steps, noise
multiplier, wall-clock totals), an output of the accountant, or a statistic of
DP output (the synthetic text, scored against the real held-out eval split).
A statistic of private data without noise (a generator's `private_stats`, a
metric's `non_dp_keys`) is written only when the user opts in with
`tracking.log_private_stats=true`, and every such field is then named in
`non_dp_outputs`. `check` enforces the list whenever results are written
(`synbench.job.results.write_results`): a field outside it fails the job, named.

Only the core's built-in controls may be non-private: `copy` (releases the
private set) and `public` (never reads it). They are known by the identity of
their registered classes (`is_control`), not by anything a plugin class can
declare, so a plugin cannot exempt itself from the budget check.
docs/release.md documents all of this.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import TYPE_CHECKING, Any, Mapping, Protocol

from synbench.core.errors import SynBenchError
from synbench.job.record import HEADER

if TYPE_CHECKING:
    from synbench.core.base import Generator

log = logging.getLogger(__name__)

# The built-in controls, as `module:class` of the classes the core registers. `is_control` compares the class
# itself with the one that module defines, so a plugin class that copies the names is not one of them.
CONTROLS = frozenset({"synbench.generators.copy:CopyGenerator", "synbench.generators.public:PublicGenerator"})
CONTROL_NOISE = "n/a"  # the `noise` field of a control's results: it draws no privacy noise

# The header every job's results hold: the fields of the record type (`synbench.job.record.JobRecord`, where each
# says why it is public); a task adds the sections it declares (`Task.results_sections`), and its `generation` keys
# are the ones it declares (`Task.generation_fields`) and its generator's `public_details`.
RESULT_FIELDS = frozenset(HEADER)
TRACKER_PREFIX = "tracker:"  # a `non_dp_outputs` entry for a per-step curve that went to the tracker only


class ReleaseError(SynBenchError):
    """Results hold a field outside the release allow-list: the job fails rather than write it."""


def is_control(generator: "type[Generator] | Generator") -> bool:
    """True only for the core's built-in controls (`CONTROLS`), by class identity, whatever a class declares."""
    cls = generator if isinstance(generator, type) else type(generator)
    if f"{cls.__module__}:{cls.__qualname__}" not in CONTROLS:
        return False
    module = sys.modules.get(cls.__module__) or importlib.import_module(cls.__module__)
    return getattr(module, cls.__qualname__, None) is cls


def noise_mode(generator: "type[Generator] | Generator", noise: str) -> str:
    """The `noise` field of results: a control's is "n/a" (it draws no privacy noise); else the noise source's mode."""
    return CONTROL_NOISE if is_control(generator) else noise


def is_control_noise(noise: str | None) -> bool:
    """Whether a job's results are a control's (their `noise` is CONTROL_NOISE): tables show "control" for its eps,
    which it did not apply."""
    return noise == CONTROL_NOISE


def warn_about_control(
    generator: "type[Generator] | Generator",
    name: str,
    epsilon: float,
    non_private_control: bool,
    n_private: int,
    n_synthetic: int,
    size_key: str,
) -> None:
    """One warning line for each way a control's job says more than it did: a finite eps that it does not apply
    (copy releases the private set, public never reads it), and, for copy (`non_private_control`), more documents
    (`n_synthetic`, set by `size_key`) than the private set of `n_private` holds, each then repeated. The release
    step of every job that runs a generator calls it (`synbench.job.lifecycle.JobRun.record_release`)."""
    if not is_control(generator):
        return
    if epsilon != float("inf"):
        log.warning(
            "generator '%s' is a control and does not apply eps=%g (copy releases the private set as it is, public "
            "never reads it); tables show its eps as 'control'",
            name,
            epsilon,
        )
    if non_private_control and n_synthetic > n_private:
        log.warning(
            "%s=%d is more than the %d private documents that generator '%s' releases: each is "
            "repeated about %.0f times; set %s=%d (or null) for each document once",
            size_key,
            n_synthetic,
            n_private,
            name,
            n_synthetic / n_private,
            size_key,
            n_private,
        )


def public_details(generator: "Generator", name: str, details: Mapping[str, Any]) -> dict[str, Any]:
    """The fit report's details that the generator declares public; the rest is dropped (named, never shown)."""
    declared = type(generator).public_details
    dropped = sorted(set(details) - declared)
    if dropped:
        log.warning(
            "generator '%s' reported details %s that its class does not declare in `public_details`; "
            "they were not written (declare only public plan values or statistics of DP output)",
            name,
            dropped,
        )
    return {k: v for k, v in details.items() if k in declared}


def split_private_stats(stats: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, list[float]]]:
    """A generator's `private_stats` as (scalars for results.json, per-step curves for the tracker)."""
    scalars = {k: v for k, v in stats.items() if not isinstance(v, (list, tuple))}
    curves = {k: list(v) for k, v in stats.items() if isinstance(v, (list, tuple))}
    return scalars, curves


class TaskDeclarations(Protocol):
    """What the release check reads of a job's task class (`synbench.tasks.base.Task` declares both)."""

    results_sections: frozenset[str]  # the results.json sections the task adds to the header
    generation_fields: frozenset[str]  # the `generation` keys the task writes


def violations(
    results: Mapping[str, Any], generator: "type[Generator] | None", task: TaskDeclarations | None
) -> list[str]:
    """Fields of `results` outside the allow-list (and not declared in `non_dp_outputs`); empty when the release is
    clean.

    `generator` and `task` are the classes the job ran (None for one it never
    reached): the lifecycle hands over the classes it holds, so the check
    looks no name up and a job's writer stays below the registry.
    """
    flagged = set(results.get("non_dp_outputs", []))
    sections = task.results_sections if task is not None else frozenset()
    bad = [key for key in results if key not in RESULT_FIELDS | sections]
    allowed = (task.generation_fields if task is not None else frozenset()) | (
        generator.public_details if generator else frozenset()
    )
    bad += [
        f"generation.{k}"
        for k in results.get("generation", {})
        if k not in allowed and f"generation.{k}" not in flagged
    ]
    return bad


def release_error(fields: list[str]) -> ReleaseError:
    """The error that fails a job whose results hold `fields` outside the allow-list (names, never values)."""
    return ReleaseError(
        f"results hold field(s) outside the release allow-list: {', '.join(fields)}; a plugin adds a "
        "generation detail by declaring it in `public_details` (a public plan value or a statistic of "
        "DP output); see docs/release.md"
    )


def without(results: Mapping[str, Any], fields: list[str]) -> dict[str, Any]:
    """A copy of `results` without `fields` (top-level names, or `generation.<key>`)."""
    kept = {k: v for k, v in results.items() if k not in fields}
    if isinstance(kept.get("generation"), Mapping):
        kept["generation"] = {k: v for k, v in kept["generation"].items() if f"generation.{k}" not in fields}
    return kept
