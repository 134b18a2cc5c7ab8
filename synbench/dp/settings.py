"""The settings every DP-SGD generator shares (training, label plan, hardware): a dataclass of the config schema.

Importable without torch (the ConfigStore registers it when Hydra reads the
configs): the methods that build torch objects import it when called.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from synbench.core.errors import ConfigError
from synbench.core.privacy import PrivacySpec
from synbench.dp import label_sets
from synbench.lm.settings import check_num_threads

if TYPE_CHECKING:
    import torch

    from synbench.dp.module import TrainConfig

# Lightning precisions the DP core supports: clipping and noise are fp32 in all of them (synbench.dp.hooks).
# bf16-mixed-if-native: bf16-mixed where the device runs bf16 natively (synbench.lm.models.native_bf16), else 32-true
PRECISIONS = ("32-true", "bf16-mixed", "16-mixed", "bf16-mixed-if-native")
LABEL_PRIORS = label_sets.PRIORS


def at_least_one(settings: Any, *keys: str) -> None:
    """Refuse a count below 1 (`<section>.<key>`), naming it: a type says integer, not how small."""
    for key in keys:
        if getattr(settings, key) < 1:
            raise ConfigError(f"{settings.section}.{key}={getattr(settings, key)} must be at least 1")


@dataclass(frozen=True)
class DPSGDOptions:
    """Keys shared by DP-SGD generators: the schema of their `generator.*` training, label-plan and hardware keys.

    A generator subclasses it with its own keys (and its own defaults where they differ); the checks a type cannot
    express are in `__post_init__`, one place per key.
    """

    section: ClassVar[str] = "generator"  # where the keys are in the config (the checks' messages name it)

    epochs: int = 1
    batch_size: int = 64  # EXPECTED logical batch: Poisson sample rate q = 1 / ceil(N / batch_size)
    physical_batch_size: int = 8  # Opacus BatchMemoryManager splits each logical batch into these
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup_steps: int = 0  # then cosine decay to 0 over the planned steps
    max_grad_norm: float = 1.0  # per-sample clip norm C
    grad_sample_mode: str = "hooks"  # hooks | ghost (ghost clipping: no per-sample gradients materialised)
    # label sets of the synthetic set (synbench/dp/label_sets.py): dp = the DP label-set plan, in the accounting |
    # uniform = the public prior (one label per document, no budget; single-label data only) | auto = uniform on
    # single-label data, dp on multi-label data (where one label per document would misstate every label set)
    label_prior: str = "dp"
    label_budget_share: float = 0.05  # the label release alone is (share * eps, delta)-DP; DP-SGD gets the rest
    label_sets: label_sets.LabelSetOptions = field(default_factory=label_sets.LabelSetOptions)
    accelerator: str = "auto"  # auto | cpu | gpu
    devices: int = 1
    strategy: str = "auto"  # auto | dpddp (multi-GPU: Lightning DDP launcher, Opacus DPDDP + distributed optimizer)
    # 32-true | bf16-mixed | 16-mixed (CUDA, grad_sample_mode=hooks) | bf16-mixed-if-native; synbench/dp/hooks.py
    precision: str = "32-true"
    fp16_loss_scale: float = 1024.0  # static loss scale under precision=16-mixed (CUDA); see synbench.dp.module
    num_threads: int | None = None  # torch CPU threads for the whole job (process-wide); null = PyTorch's default

    def __post_init__(self) -> None:
        choices = {
            "grad_sample_mode": ("hooks", "ghost"),
            "label_prior": LABEL_PRIORS,
            "strategy": ("auto", "dpddp"),
            "accelerator": ("auto", "cpu", "gpu"),
            "precision": PRECISIONS,
        }
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                raise ConfigError(f"{self.section}.{key}={getattr(self, key)!r} must be one of {', '.join(allowed)}")
        at_least_one(self, "epochs", "batch_size", "physical_batch_size", "devices")
        check_num_threads(self.num_threads, f"{self.section}.num_threads")
        if self.precision == "16-mixed" and self.grad_sample_mode != "hooks":
            raise ConfigError(
                f"{self.section}.precision=16-mixed needs {self.section}.grad_sample_mode=hooks (an fp16 overflow "
                "inside ghost clipping's second backward cannot be confined to one example); "
                "use precision=bf16-mixed with ghost"
            )
        if self.label_prior != "uniform" and not 0.0 < self.label_budget_share < 1.0:
            raise ConfigError(
                f"{self.section}.label_budget_share={self.label_budget_share} must lie strictly between 0 and 1 "
                "(label_prior=uniform spends nothing on labels)"
            )
        if isinstance(self.label_sets, Mapping):  # built from Python with a dict
            object.__setattr__(self, "label_sets", label_sets.LabelSetOptions(**self.label_sets))

    def label_share(self, multi_label: bool) -> float:
        """The share of eps the label release spends: none under the public uniform prior (single-label data)."""
        return self.label_budget_share if label_sets.prior_is_dp(self.label_prior, multi_label) else 0.0

    def begin_fit(self, privacy: PrivacySpec) -> None:
        """Process-wide torch threads (if set), and an accountant that can account DP-SGD for a private fit."""
        import torch

        from synbench.dp import accounting

        if self.num_threads:
            torch.set_num_threads(int(self.num_threads))
        if privacy.is_private:
            accounting.check_accountant(privacy.accountant)

    def device(self) -> torch.device:
        import torch

        gpu = torch.cuda.is_available() and self.accelerator in ("auto", "gpu")
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if gpu else torch.device("cpu")

    def train_config(self, privacy: PrivacySpec, noise_multiplier: float | None) -> TrainConfig:
        """The shared training core's config; `noise_multiplier` as the job's budget calibrated it (None: no DP)."""
        from synbench.dp.module import TrainConfig

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
            noise_multiplier=noise_multiplier,
            noise=privacy.noise,
            loss_scale=self.fp16_loss_scale if self.precision == "16-mixed" else 1.0,
        )

    def precision_on(self, device: torch.device) -> str:
        """The precision that runs on `device`: `bf16-mixed-if-native` is bf16-mixed where the device runs bf16
        natively, else 32-true (emulated bf16 is tens of times slower); any other precision is itself."""
        if self.precision != "bf16-mixed-if-native":
            return self.precision
        from synbench.lm.models import native_bf16

        return "bf16-mixed" if native_bf16(device) else "32-true"

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
            "precision": self.precision_on(device),
        }
