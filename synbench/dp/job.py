"""What every DP-SGD generator shares around the training core: its settings, and the budget of the whole job.

`DPSGDOptions` holds (and checks) the training, label-plan and hardware
keys common to DP-SGD generators; a generator subclasses it with its own.
`JobBudget.plan` calibrates the whole job once, before training: the DP
label-set plan (`synbench.dp.label_sets`, its share of eps) and the DP-SGD
noise multiplier, composed in one accountant history
(`synbench.dp.accounting`); `release_labels` runs the label mechanism and
`spent` checks that the accountant charged exactly the plan and returns the
job's epsilon.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from synbench.core.corpus import Corpus
from synbench.core.privacy import PrivacySpec
from synbench.dp import accounting, label_sets
from synbench.dp.poisson import PoissonPlan, charged_history
from synbench.dp.settings import DPSGDOptions


@dataclass(frozen=True)
class JobBudget:
    """The calibrated plan of one job: the label-set release (None: uniform prior) and DP-SGD's noise multiplier."""

    share: float
    labels: label_sets.LabelSetBudget | None
    calibration: accounting.Calibration

    @classmethod
    def plan(cls, settings: DPSGDOptions, corpus: Corpus, poisson: PoissonPlan, privacy: PrivacySpec) -> "JobBudget":
        share = settings.label_share(corpus.multi_label)
        labels = (
            settings.label_sets.calibrate(share * privacy.epsilon, privacy.delta, corpus.multi_label) if share else None
        )
        cal = accounting.calibrate(
            privacy.epsilon, privacy.delta, poisson.sample_rate, poisson.steps, privacy.accountant, labels
        )
        return cls(share, labels, cal)

    def noise_multiplier(self, privacy: PrivacySpec) -> float | None:
        """DP-SGD's calibrated noise multiplier, or None when the job is not private (eps = inf)."""
        return self.calibration.noise_multiplier if privacy.is_private else None

    def release_labels(self, corpus: Corpus, privacy: PrivacySpec) -> label_sets.LabelSetRelease:
        """The label-set mechanism on the private corpus (noise from `privacy.noise`), or the public uniform prior."""
        if self.labels is None:
            return label_sets.uniform(corpus.label_space)
        return label_sets.release(corpus, self.labels, privacy.noise)

    def spent(self, privacy: PrivacySpec, engine: Any, name: str) -> float:
        """The job's epsilon from what the accountant charged, after checking it charged exactly the plan."""
        if not privacy.is_private:
            return math.inf
        cal = self.calibration
        charged = charged_history(engine)
        if charged != [(cal.noise_multiplier, cal.sample_rate, cal.steps)]:
            raise RuntimeError(
                f"{name}: the accountant charged {charged}, not the planned "
                f"{(cal.noise_multiplier, cal.sample_rate, cal.steps)}"
            )
        return accounting.epsilon(
            accounting.job_history(charged, self.labels),
            accounting.job_delta(privacy.delta, self.labels),
            privacy.accountant,
        )

    def details(self) -> dict[str, Any]:
        """Plan values for a fit report (public: fixed before any private data is read)."""
        cal = self.calibration
        return {
            "noise_multiplier": cal.noise_multiplier,
            "sample_rate": cal.sample_rate,
            "planned_steps": cal.steps,
            "label_budget_share": self.share,
            **(self.labels.details() if self.labels is not None else {}),
        }


# The `public_details` keys every DP-SGD generator reports (plan values, the accountant's output, the label release).
DPSGD_DETAILS = frozenset(
    {
        "epsilon_spent",
        "delta",
        "accountant",
        "noise",
        "secure_mode",
        "noise_multiplier",
        "sample_rate",
        "planned_steps",
        "steps",
        "epochs",
        "expected_batch_size",
        "label_budget_share",
        "grad_sample_mode",
        "trainable_params",
        "n_train_docs",
        "train_s",
        *label_sets.PUBLIC_DETAILS,
    }
)
