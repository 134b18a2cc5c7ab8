"""DP-Diffusion's options (`generator=dpdiffusion`): the schema of its `generator.*` keys, importable without torch."""

from __future__ import annotations

from dataclasses import dataclass

from synbench.core.errors import ConfigError
from synbench.dp.settings import DPSGDOptions, at_least_one

INITS = ("pretrained", "scratch")
SAMPLE_LENGTHS = ("full", "model")


@dataclass(frozen=True)
class DPDiffusionOptions(DPSGDOptions):
    """Every `generator.*` key of DP-Diffusion: the denoiser, its diffusion loss and sampling, and the DP-SGD keys."""

    init: str = "pretrained"  # pretrained (MiniLM's encoder layers, tied head) | scratch (random init from seed)
    pretrained_layers: int = 3  # init=pretrained: MiniLM's bottom encoder layers kept (of 6)
    trained_layers: int = 3  # init=pretrained: the top ones of those fine-tuned; the rest run frozen, without gradient
    label_gain: float = 10.0  # init=pretrained: fixed multiplier on the label paths (Adam: that x lr there)
    label_prior: str = "auto"  # the public uniform prior on single-label data (synbench/dp/settings.py)
    d_model: int = 128  # d_model, n_layers, n_heads, d_ff: init=scratch only
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 512
    max_seq_len: int = 64
    t_min: float = 1e-3
    noise_draws: int = 1
    sample_steps: int = 64
    sample_length: str = "full"  # full: every text is max_seq_len - 1 tokens ([SEP] never written) | model: the
    # denoiser writes [SEP] too and the text ends at the first one (docs/generators/dpdiffusion.md: why full)
    temperature: float = 1.0
    sample_batch_size: int = 64

    def __post_init__(self) -> None:
        super().__post_init__()
        at_least_one(
            self,
            "d_model",
            "n_layers",
            "n_heads",
            "d_ff",
            "max_seq_len",
            "noise_draws",
            "pretrained_layers",
            "trained_layers",
            "sample_steps",
            "sample_batch_size",
        )
        if self.init not in INITS:
            raise ConfigError(f"generator.init={self.init!r} must be one of {', '.join(INITS)}")
        if self.strategy != "auto":
            raise ConfigError("generator 'dpdiffusion' runs on one device (strategy=auto)")
        if not self.label_gain > 0:
            raise ConfigError(f"generator.label_gain={self.label_gain} must be positive")
        if self.sample_length not in SAMPLE_LENGTHS:
            raise ConfigError(
                f"generator.sample_length={self.sample_length!r} must be one of {', '.join(SAMPLE_LENGTHS)}"
            )
        if not self.temperature > 0:
            raise ConfigError(f"generator.temperature={self.temperature} must be positive")
