"""`check_metric`: the contracts of a `synbench.core.base.Metric`, checked from outside.

The job writes a metric's values flat into one results section and, unless
the user opts in, drops the keys the metric names in `non_dp_keys` (values
computed from the private training split without noise); keys in
`diagnostic_keys` (the operator's reference, such as utility's real-data
upper bound) are always written and named in `non_dp_outputs`. So the kit checks
that the values are a flat dict of numbers for a known section, that they are
reproducible from `ctx.seed`, and that every value the metric does not
declare non-DP stays the same when only the private split (`ctx.train`)
changes: otherwise a statistic of private data would reach results.json.
"""

from __future__ import annotations

import tempfile
from typing import Any, Callable

from synbench.core.base import EncoderSpec, Metric, MetricContext
from synbench.core.corpus import Corpus
from synbench.testing.checks import begin
from synbench.testing.corpora import public_corpus
from synbench.testing.values import canonical, is_number


def check_metric(factory: Callable[[], Metric], *, encoder: EncoderSpec | None = None, seed: int = 0) -> None:
    """Check that the metrics `factory()` builds keep the `Metric` contracts; raise `ConformanceError` if not.

    The kit scores a synthetic corpus against a real one (disjoint parts of
    its public corpus) with two different private training splits in
    `ctx.train`. Pass `encoder` for a metric that embeds text (it is put in
    `MetricContext.encoder`).
    """
    first, checks = begin("metric", factory, Metric)
    real, synthetic = public_corpus(part=0, name="real"), public_corpus(part=1, name="synthetic")

    def score(train: Corpus) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="synbench-check-metric-") as job_dir:  # fresh: no cache carries over
            ctx = MetricContext(seed=seed, job_dir=job_dir, train=train, encoder=encoder)
            with checks.running("call", "metric(real, synthetic, ctx)"):
                return factory()(real, synthetic, ctx)

    train = public_corpus(part=2, name="private")
    values = score(train)
    if (
        not isinstance(values, dict)
        or not values
        or not all(isinstance(k, str) and is_number(v) for k, v in values.items())
    ):
        checks.stop(
            "values",
            f"metric(real, synthetic, ctx) returned {type(values).__name__} "
            f"{sorted(map(repr, values))[:5] if isinstance(values, dict) else ''}",
            "return a non-empty flat dict of str keys to numbers (float or int): results.json sections are flat",
        )
    changed = _differing(values, score(train))
    non_dp = first.non_dp_keys() | first.diagnostic_keys()
    if changed:
        checks.fail(
            "deterministic",
            f"two calls with the same ctx.seed={seed} gave different {changed}",
            "draw every random choice (shuffles, k-means seeds, subsamples) from ctx.seed",
        )
    elif moved := [
        k for k in _differing(values, score(public_corpus(part=3, name="private-other"))) if k not in non_dp
    ]:
        checks.fail(
            "private-split",
            f"{moved} changed when only the private training split ctx.train changed",
            "compute released values from the real eval split and the synthetic corpus only, or name the keys "
            "computed from ctx.train in non_dp_keys() (written only on the user's opt-in) or, for the "
            "operator's own reference, diagnostic_keys() (always written, named in non_dp_outputs)",
        )
    undeclared = sorted(set(non_dp) - set(values))
    if undeclared:
        checks.fail(
            "non-dp-keys",
            f"non_dp_keys()/diagnostic_keys() name {undeclared}, which the metric does not return",
            "return from non_dp_keys() and diagnostic_keys() only keys that this configuration of the metric returns",
        )
    checks.done()


def _differing(a: dict[str, Any], b: object) -> list[str]:
    """Keys whose values differ between two results (a key missing on one side differs)."""
    other = b if isinstance(b, dict) else {}
    return sorted(k for k in set(a) | set(other) if canonical(a.get(k)) != canonical(other.get(k)))
