"""What every DP-SGD generator shares around the training core: its settings, and the budget of the whole job.

`DPSGDSettings` holds (and checks) the training, label-plan and hardware
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
import os
from dataclasses import dataclass
from typing import Any, Mapping

import torch

from synbench.corpus import Corpus
from synbench.dp import accounting, label_sets
from synbench.dp.module import TrainConfig
from synbench.dp.poisson import PoissonPlan, charged_history
from synbench.errors import ConfigError
from synbench.privacy import PrivacySpec

# Lightning precisions the DP core supports: clipping and noise are fp32 in all of them (synbench.dp.hooks).
PRECISIONS = ("32-true", "bf16-mixed", "16-mixed")


@dataclass(frozen=True)
class DPSGDSettings:
    """Keys shared by DP-SGD generators (see conf/generator/dpgen.yaml and dpdiffusion.yaml)."""

    epochs: int = 1
    batch_size: int = 64
    physical_batch_size: int = 8
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup_steps: int = 0
    max_grad_norm: float = 1.0
    grad_sample_mode: str = "hooks"
    label_prior: str = "dp"
    label_budget_share: float = 0.05
    label_sets: Mapping[str, Any] | None = None
    accelerator: str = "auto"
    devices: int = 1
    strategy: str = "auto"
    precision: str = "32-true"
    fp16_loss_scale: float = 1024.0  # static loss scale under precision=16-mixed (CUDA); see synbench.dp.module
    num_threads: int | None = None

    def positive_keys(self) -> tuple[str, ...]:
        """Integer keys that must be at least 1 (a subclass adds its own)."""
        return ("epochs", "batch_size", "physical_batch_size")

    def __post_init__(self) -> None:
        choices = {
            "grad_sample_mode": ("hooks", "ghost"),
            "label_prior": ("dp", "uniform"),
            "strategy": ("auto", "dpddp"),
            "accelerator": ("auto", "cpu", "gpu"),
            "precision": PRECISIONS,
        }
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                raise ConfigError(f"generator.{key}={getattr(self, key)!r} must be one of {', '.join(allowed)}")
        for key in self.positive_keys():
            if int(getattr(self, key)) < 1:
                raise ConfigError(f"generator.{key} must be at least 1")
        if self.precision == "16-mixed" and self.grad_sample_mode != "hooks":
            raise ConfigError(
                "generator.precision=16-mixed needs generator.grad_sample_mode=hooks (an fp16 overflow "
                "inside ghost clipping's second backward cannot be confined to one example); "
                "use precision=bf16-mixed with ghost"
            )
        if self.label_prior == "dp" and not 0.0 < self.label_budget_share < 1.0:
            raise ConfigError(
                f"generator.label_budget_share={self.label_budget_share} must lie strictly between 0 and 1 "
                "(label_prior=uniform spends nothing on labels)"
            )
        self.label_config()

    def label_config(self) -> label_sets.LabelSetConfig:
        """The `label_sets` node (delta split, tail) as the shared mechanism's config."""
        return label_sets.LabelSetConfig.from_node(self.label_sets)

    @property
    def label_share(self) -> float:
        return self.label_budget_share if self.label_prior == "dp" else 0.0

    def begin_fit(self, privacy: PrivacySpec) -> None:
        """Process-wide torch threads (if set), and an accountant that can account DP-SGD for a private fit."""
        if self.num_threads:
            torch.set_num_threads(int(self.num_threads))
        if privacy.is_private:
            accounting.check_accountant(privacy.accountant)

    def device(self) -> torch.device:
        gpu = torch.cuda.is_available() and self.accelerator in ("auto", "gpu")
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if gpu else torch.device("cpu")

    def train_config(self, privacy: PrivacySpec, budget: "JobBudget") -> TrainConfig:
        return TrainConfig(
            epochs=self.epochs,
            batch_size=self.batch_size,
            physical_batch_size=self.physical_batch_size,
            lr=self.lr,
            weight_decay=self.weight_decay,
            max_grad_norm=self.max_grad_norm,
            warmup_steps=self.warmup_steps,
            grad_sample_mode=self.grad_sample_mode,
            accountant=privacy.accountant,
            noise_multiplier=budget.calibration.noise_multiplier if privacy.is_private else None,
            noise=privacy.noise,
            loss_scale=self.fp16_loss_scale if self.precision == "16-mixed" else 1.0,
        )

    def trainer_kwargs(self, device: torch.device) -> dict[str, Any]:
        """`fit_module` keywords: accelerator, devices, strategy (Opacus DPDDP with `dpddp`), precision."""
        if self.precision == "16-mixed" and device.type != "cuda":
            raise ConfigError(
                "generator.precision=16-mixed is CUDA only (fp16 autocast); on CPU use bf16-mixed or 32-true"
            )
        from synbench.dp.distributed import DPDDPStrategy

        return {
            "accelerator": "gpu" if device.type == "cuda" else "cpu",
            "devices": self.devices,
            "strategy": DPDDPStrategy() if self.strategy == "dpddp" else "auto",
            "precision": self.precision,
        }


@dataclass(frozen=True)
class JobBudget:
    """The calibrated plan of one job: the label-set release (None: uniform prior) and DP-SGD's noise multiplier."""

    share: float
    labels: label_sets.LabelSetBudget | None
    calibration: accounting.Calibration

    @classmethod
    def plan(cls, settings: DPSGDSettings, corpus: Corpus, poisson: PoissonPlan, privacy: PrivacySpec) -> "JobBudget":
        share = settings.label_share
        labels = (
            settings.label_config().calibrate(share * privacy.epsilon, privacy.delta, corpus.multi_label)
            if share
            else None
        )
        cal = accounting.calibrate(
            privacy.epsilon, privacy.delta, poisson.sample_rate, poisson.steps, privacy.accountant, labels
        )
        return cls(share, labels, cal)

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
