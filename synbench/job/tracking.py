"""Experiment tracking: Weights & Biases, offline by default, or nothing.

What may leave the machine through a tracker: metrics, the resolved config
and, when asked, synthetic samples of DP output (not the job's console or log,
which W&B would otherwise copy into the run). Statistics of private data
without noise (training losses, realised batch sizes) only with
`tracking.log_private_stats=true`, which marks the job. Never private documents or
audit targets: the tracker API takes numbers and a `Corpus` only through
`log_samples`, which refuses output that is not DP (for example the `copy`
control, whose "synthetic" text is the private set).
"""

from __future__ import annotations

import logging
import math
import netrc
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional
from urllib.parse import urlparse

from synbench.core.base import FitReport, Tracker
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.core.files import to_json
from synbench.job.spec import JobSpec

log = logging.getLogger(__name__)


class NullTracker(Tracker):
    """Tracks nothing (`tracking=none`)."""

    def __init__(self, spec: JobSpec, job_dir: Path, group: str) -> None:
        pass

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        pass

    def log_samples(self, synthetic: Corpus, report: FitReport) -> None:
        pass

    def log_image(self, name: str, path: Path) -> None:
        pass

    def finish(self, failed: bool = False) -> None:
        pass


@dataclass
class WandbOptions:
    """`tracking=wandb`'s keys (conf/tracking/wandb.yaml)."""

    mode: str = "offline"  # offline | online | disabled
    project: str = "synbench"
    entity: Optional[str] = None
    log_samples: bool = False  # log synthetic samples (only ever for DP output; never private text)
    n_samples: int = 20

    def __post_init__(self) -> None:
        if self.mode not in ("offline", "online", "disabled"):
            raise ConfigError(f"tracking.mode={self.mode!r} is unknown; use offline, online or disabled")
        if self.n_samples < 0:
            raise ConfigError(f"tracking.n_samples={self.n_samples} must be at least 0")


class WandbTracker(Tracker):
    """One W&B run per job, grouped per sweep, finished even when the job fails. Built by the registry with every
    `WandbOptions` key, whose defaults are the only ones."""

    options = WandbOptions

    def __init__(
        self,
        spec: JobSpec,
        job_dir: Path,
        group: str,
        mode: str,
        project: str,
        entity: str | None,
        log_samples: bool,
        n_samples: int,
    ) -> None:
        import wandb

        if mode == "online" and not has_wandb_key():
            raise ConfigError(
                "tracking.mode=online needs a W&B API key, and none is set: export WANDB_API_KEY (or run "
                "`wandb login`), or keep tracking.mode=offline and upload later with `wandb sync`"
            )
        self._wandb = wandb
        self._want_samples = log_samples
        self._n_samples = n_samples
        # Passing mode to init (not WANDB_MODE) keeps the choice to this run, not the whole process.
        os.environ.setdefault("WANDB_SILENT", "true")
        # Flat keys to group and plot a sweep by (W&B's grouping, parallel coordinates, `task=wandb_workspace`), and
        # the whole job description under `job` (spread at the top level, its `generator` and `dataset` nodes would
        # replace the flat names).
        flat = {
            "dataset": spec.dataset,
            "generator": spec.generator,
            "eps": spec.epsilon,
            "seed": spec.seed,
            "task": spec.task,
        }
        self.run = wandb.init(
            project=project,
            entity=entity,
            group=group,
            mode=mode,
            dir=str(job_dir),
            name=job_dir.name,
            job_type=spec.task,
            config=to_json({**flat, "job": spec.config}),
            reinit="finish_previous",
            # W&B copies the process's console into the run (output.log, synced with it) by default: the job's log
            # lines name counts of the private set (documents fitted on, rows a dataset dropped), which reach the
            # tracker only with log_private_stats. The run holds what this tracker logs, nothing else.
            settings=wandb.Settings(console="off"),
        )
        # A job logs its figures once, at its end, and W&B's summary keeps each key's last value as a plain number,
        # which sweep views (runs table, scatter of a figure against eps, `task=wandb_workspace`) read by name.
        # (`define_metric(pattern, summary="last")` would store {"last": value} under a glob's keys instead.)
        self._axes: set[str] = set()
        self._eps = spec.epsilon

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        """Log numbers; with `step`, as points of a curve on the section's own step axis (`<section>/step`).

        W&B's own step only grows, and drops a point logged with a lower one:
        curves logged after the job's summary (opt-in per-step fit statistics)
        would lose every point but the last. `define_metric` gives each curve
        section its own x-axis instead, so every point is kept.
        """
        numeric = {k: v for k, v in metrics.items() if isinstance(v, (int, float))}
        if step is None:
            # beside the job's nominal eps (a finite one), the x-axis of `task=wandb_workspace`'s plots
            self.run.log(numeric | ({"eps": self._eps} if math.isfinite(self._eps) else {}))
            return
        axes = {f"{k.rpartition('/')[0] or k}/step" for k in numeric}
        for axis in sorted(axes - self._axes):
            self.run.define_metric(axis)
            self.run.define_metric(f"{axis.rpartition('/')[0]}/*", step_metric=axis)
            self._axes.add(axis)
        self.run.log({**numeric, **{axis: step for axis in axes}})

    def log_samples(self, synthetic: Corpus, report: FitReport) -> None:
        if not self._want_samples:
            return
        if not report.is_private:
            log.warning(
                "not logging samples: this generator's output is not DP (epsilon_spent=inf), "
                "so it may hold private text"
            )
            return
        rows = [[t, "\t".join(ls)] for t, ls in zip(synthetic.texts[: self._n_samples], synthetic.labels)]
        self.run.log({"synthetic_samples": self._wandb.Table(columns=["text", "labels"], data=rows)})

    def log_image(self, name: str, path: Path) -> None:
        """A figure the job wrote (plots of metrics only, never of document text)."""
        self.run.log({name: self._wandb.Image(str(path))})

    def finish(self, failed: bool = False) -> None:
        """End the run; a failed job's run is marked failed (exit code 1) in W&B."""
        self.run.finish(exit_code=1 if failed else 0)


def has_wandb_key() -> bool:
    """Whether W&B would find an API key: `WANDB_API_KEY`, or a netrc entry for its host (what `wandb login` writes).

    Checked before `wandb.init`, which would otherwise fail deep inside with a
    traceback (or wait for a key on a terminal).
    """
    if os.environ.get("WANDB_API_KEY"):
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname or "api.wandb.ai"
    try:
        return netrc.netrc(os.environ.get("NETRC")).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


def make_tracker(node: Mapping[str, Any], spec: JobSpec, job_dir: Path, group: str) -> Tracker:
    """The tracker a `tracking` config node names (`_plugin_: wandb | none`, or a third party's)."""
    from synbench.core import registry

    params = {k: v for k, v in node.items() if k != "log_private_stats"}  # read by the tasks, not the tracker
    return registry.create(Tracker, params or {"_plugin_": "none"}, spec=spec, job_dir=job_dir, group=group)
