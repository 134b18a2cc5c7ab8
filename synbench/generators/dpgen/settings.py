"""DP-Gen's options (`generator=dpgen`): the schema of its `generator.*` keys, importable without torch.

The defaults are the library's (the paper's where it states them);
conf/generator/dpgen.yaml sets the demo's sizes and
conf/paper_generator/dpgen.yaml the paper's hardware and batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from synbench.core.errors import ConfigError
from synbench.core.privacy import PrivacySpec
from synbench.data.common import LONG_DOCUMENTS
from synbench.dp.settings import DPSGDOptions, at_least_one
from synbench.lm.settings import DTYPES, TRANSFORMERS_TOP_K

if TYPE_CHECKING:
    from synbench.dp.module import TrainConfig


def check_control_code(template: str | None) -> None:
    """A template must place the labels, or every prompt would be the same and no label would condition anything."""
    if template is not None and "{labels}" not in template:
        raise ConfigError(
            f"generator.control_code={template!r} (set by dataset.control_code) has no {{labels}} "
            "placeholder; write where the labels go, e.g. 'Condition: {labels}\\n\\n', or set it to null"
        )


# LoRA as the paper fine-tunes with it (r=8, alpha=16, dropout 0, every attention and MLP projection, every layer);
# top_layers is ours (adapters on the last N decoder layers only), in the dict so the schema node has the key.
PAPER_LORA = {
    "r": 8,
    "alpha": 16,
    "dropout": 0.0,
    "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "top_layers": None,
}


@dataclass(frozen=True)
class DPGenTrainingOptions(DPSGDOptions):
    """Every `generator.*` key of DP-Gen but `model` and `workdir` (training, label plan, sampling, hardware)."""

    lora: dict[str, Any] | None = field(default_factory=lambda: dict(PAPER_LORA))  # null = full fine-tuning
    loss_on: str = "text"  # text = loss on document + eos only (label prefix masked) | all
    # label prefix template ({labels} = the labels, tab-joined): the dataset's wording; null = the authors'
    control_code: str | None = None
    max_seq_len: int = 128  # training tokens per sequence (prefix + text + eos)
    max_train_docs: int | None = None  # uniform subset (secret randomness) of the private set to train on; null = all
    # documents longer than max_seq_len: truncate (head; the paper's) | head_tail | chunk (all chunks of a document
    # in or out of a Poisson batch together, their gradients summed and clipped as ONE document); the dataset's
    long_documents: str = "truncate"
    max_chunks: int = 4
    # with lora.top_layers: the frozen layers below the adapters run once per document before training, and every
    # DP-SGD step runs only the top layers and the head (synbench/generators/dpgen/trunk.py; same training, cheaper)
    cache_trunk: bool = False
    # recompute decoder layers in backward (per-sample gradients unchanged): auto = on from max_seq_len 1024
    activation_checkpointing: bool | str = "auto"
    physical_batch_tokens: int = 4096  # physical batches capped at this many training tokens
    temperature: float = 0.9
    top_p: float = 1.0
    top_k: int = TRANSFORMERS_TOP_K  # sample among the top_k most likely tokens (before top_p); 0 = every token
    max_new_tokens: int = 256  # also capped at max_seq_len (the longest document the model was trained on)
    # largest sampling batch (KV cache, left padding); long outputs: lowered to what 40% of free memory holds in
    # KV cache (results: sample_batch_size_used)
    sample_batch_size: int = 64
    # the dtype the trained model (LoRA merged) samples and is saved in: float32 | bfloat16 | float16 |
    # bfloat16_if_native. Training is untouched (`precision`); bfloat16 halves sampling's weight traffic and runs
    # bf16 matmuls (about 2x faster on CPUs with AVX512-BF16 or AMX, and on GPUs; emulated, far slower, elsewhere)
    sample_dtype: str = "float32"

    @property
    def checkpointing(self) -> bool:
        """Activation checkpointing: as set, or (auto) from 1024 training tokens on, where activations dominate
        memory."""
        return (
            self.max_seq_len >= 1024 if self.activation_checkpointing == "auto" else bool(self.activation_checkpointing)
        )

    @property
    def physical_documents(self) -> int:
        """Documents per physical batch: `physical_batch_size`, capped at `physical_batch_tokens` of training tokens."""
        rows = self.max_seq_len * (self.max_chunks if self.long_documents == "chunk" else 1)
        return max(1, min(self.physical_batch_size, self.physical_batch_tokens // rows))

    def train_config(self, privacy: PrivacySpec, noise_multiplier: float | None) -> TrainConfig:
        """The shared core's config, with physical batches capped in tokens (`physical_documents`)."""
        return replace(super().train_config(privacy, noise_multiplier), physical_batch_size=self.physical_documents)

    def __post_init__(self) -> None:
        super().__post_init__()
        at_least_one(self, "max_seq_len", "max_new_tokens", "sample_batch_size", "max_chunks", "physical_batch_tokens")
        check_control_code(self.control_code)
        if self.top_k < 0:
            raise ConfigError(f"generator.top_k={self.top_k} must be at least 0 (0 = every token)")
        top = (self.lora or {}).get("top_layers")
        if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
            raise ConfigError(
                f"generator.lora.top_layers={top!r} must be a whole number of decoder layers (at least 1), "
                "or null for adapters on every layer"
            )
        if self.cache_trunk and top is None:
            raise ConfigError(
                "generator.cache_trunk=true needs generator.lora.top_layers (adapters on the top layers only): "
                "with adapters in every layer there is no frozen trunk to compute once"
            )
        if self.cache_trunk and self.strategy != "auto":
            raise ConfigError(
                f"generator.cache_trunk=true runs in one process; set generator.strategy=auto (not {self.strategy})"
            )
        if self.sample_dtype not in DTYPES:
            raise ConfigError(f"generator.sample_dtype={self.sample_dtype!r} must be one of {', '.join(DTYPES)}")
        if self.long_documents not in LONG_DOCUMENTS:
            raise ConfigError(
                f"generator.long_documents={self.long_documents!r} (set by dataset.long_documents) "
                f"must be one of {', '.join(LONG_DOCUMENTS)}"
            )
        if self.activation_checkpointing not in (True, False, "auto"):
            raise ConfigError(
                f"generator.activation_checkpointing={self.activation_checkpointing!r} must be true, false or auto"
            )
        if self.long_documents == "chunk" and self.grad_sample_mode != "hooks":
            raise ConfigError(
                "long_documents=chunk needs generator.grad_sample_mode=hooks: a document's chunks are "
                "clipped as one gradient, which ghost clipping cannot form"
            )


@dataclass(frozen=True)
class DPGenOptions(DPGenTrainingOptions):
    """The whole `generator` node of DP-Gen: its settings, the model it fine-tunes and where its checkpoint goes."""

    model: Any = None  # the model config group (conf/model/*.yaml), `${model}` in conf/generator/dpgen.yaml
    # checkpoint of the trained weights + accounting goes to <workdir>/dpgen; null = the job's folder (its `job_dir`)
    workdir: str | None = None
