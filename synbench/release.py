"""What a job releases, field by field: the allow-list of `results.json` and the filters that enforce it.

The synthetic corpus, `results.json` and the tracker run are the release.
Each field is a public plan value (sample rate, planned steps, noise
multiplier, wall-clock totals), an output of the accountant, or a statistic of
DP output (the synthetic text, scored against the real held-out eval split).
A statistic of private data without noise (a generator's `private_stats`, a
metric's `non_dp_keys`) is written only when the user opts in with
`tracking.log_private_stats=true`, and every such field is then named in
`non_dp_outputs`. docs/release.md documents this list.
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

from synbench.base import Generator

log = logging.getLogger(__name__)

RESULT_FIELDS = frozenset({
    "task", "dataset", "generator", "epsilon", "delta", "epsilon_spent", "seed", "status", "job_key",
    "noise", "label_space_inferred", "non_dp_outputs", "generation", "utility", "fidelity", "audit", "timing", "config",
    "non_private_control",  # the generator declares itself not DP (`copy`): its epsilon_spent is inf at any eps
    "error",  # a failed job: the error's type and, for SynBench's own errors (which never quote data), its message
    "model_audit",  # task=model_audit: attack figures per regime and attack, and each regime's epsilon_spent
    "contamination",  # task=contamination: shares flagged per detector and the ablation (listed in non_dp_outputs)
    "filter", "utility_filtered", "fidelity_filtered",  # filter=...: what it kept (no private data) and the metrics after it
})
# The core's own `generation` keys per task; a generator adds the keys it declares in `public_details`.
GENERATION_FIELDS = {
    "benchmark": frozenset({"n_private", "n_eval", "n_synthetic", "n_empty", "n_degenerate", "empty_share",
                            "degenerate_share"}),
    "audit": frozenset({"n_runs", "runs_resumed", "n_private", "n_aux", "n_synthetic", "n_empty", "n_degenerate",
                        "degenerate_share", "planned_private_size"}),
    "model_audit": frozenset({"n_models", "models_resumed", "n_pool", "n_private", "n_aux", "planned_private_size",
                              "n_synthetic", "n_empty", "n_degenerate"}),
    "contamination": frozenset({"n_private", "n_eval"}),
}
TRACKER_PREFIX = "tracker:"  # a `non_dp_outputs` entry for a per-step curve that went to the tracker only


def public_details(generator: Generator, name: str, details: Mapping[str, Any]) -> dict[str, Any]:
    """The fit report's details that the generator declares public; the rest is dropped (named, never shown)."""
    declared = type(generator).public_details
    dropped = sorted(set(details) - declared)
    if dropped:
        log.warning("generator '%s' reported details %s that its class does not declare in `public_details`; "
                    "they were not written (declare only public plan values or statistics of DP output)", name, dropped)
    return {k: v for k, v in details.items() if k in declared}


def split_private_stats(stats: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, list[float]]]:
    """A generator's `private_stats` as (scalars for results.json, per-step curves for the tracker)."""
    scalars = {k: v for k, v in stats.items() if not isinstance(v, (list, tuple))}
    curves = {k: list(v) for k, v in stats.items() if isinstance(v, (list, tuple))}
    return scalars, curves


def violations(results: Mapping[str, Any], generator: type[Generator] | None) -> list[str]:
    """Fields of `results` outside the allow-list (and not declared in `non_dp_outputs`); empty when the release is clean."""
    flagged = set(results.get("non_dp_outputs", []))
    bad = [key for key in results if key not in RESULT_FIELDS]
    allowed = GENERATION_FIELDS.get(str(results.get("task")), frozenset()) | (generator.public_details if generator else frozenset())
    bad += [f"generation.{k}" for k in results.get("generation", {}) if k not in allowed and f"generation.{k}" not in flagged]
    return bad
