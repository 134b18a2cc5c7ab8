"""Which weights DP-Gen trains (LoRA or full fine-tuning), and the job's checkpoint of them.

The checkpoint (`<workdir>/dpgen/`) holds only what training changed (the
LoRA adapter in peft's format, or the trained tensors) plus `dpgen.json`
with the accounting of the run and its resume key (`synbench.job.resume`: keyed
by a secret outside the job folder, so it is no digest of the data). A later
`fit` of the same job on the same private data finds it and samples again
without re-training; the released numbers (epsilon spent, noise) come from
the stored accounting, not a re-run.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Mapping

from torch import nn

from synbench.core.errors import ConfigError
from synbench.core.files import write_json_atomic

STATE_FILE = "dpgen.json"
# transformers' deprecation of the property get_peft_model reads in peft up to 0.21 (peft's to change, not a job's
# reader's; 0.22 no longer reads it)
PEFT_NOISE = r"`is_gradient_checkpointing` is deprecated"
# generator.lora's keys (top_layers: adapters on the last N decoder layers only; null = all)
LORA_KEYS = ("r", "alpha", "dropout", "target_modules", "top_layers")
ADAPTER_DIR = "adapter"
FULL_FILE = "trained.safetensors"


def prepare_trainable(model: nn.Module, lora: Mapping[str, Any] | None, checkpointing: bool = False) -> nn.Module:
    """LoRA adapters through peft, or (lora=None) full fine-tuning of every Linear and Embedding weight.

    Call it after the model is on its training device: peft creates the
    adapter weights on the device of the layer they wrap, and Opacus' hooks
    must see the final parameters. Full fine-tuning unties the output layer
    from the input embedding (ghost clipping cannot clip a shared weight) and
    freezes the norm scales (Opacus has no per-sample rule for Llama's RMSNorm).
    Trainable weights are fp32 whatever the model's dtype: they are the master
    weights that clipped, noised fp32 updates are applied to (a bf16 weight
    would round most of a small update away).

    `checkpointing` recomputes each decoder layer's activations in backward
    (reentrant `torch.utils.checkpoint`): the first forward runs without
    grad, so Opacus' forward hooks record nothing there and record the
    recomputed activations, once, just before the layer's backward hooks
    fire; per-sample gradients are those of the run without checkpointing.
    """
    if checkpointing:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": True})
    model = _trainable(model, lora)
    for p in model.parameters():
        if p.requires_grad:
            p.data = p.data.float()
    return model


def _trainable(model: nn.Module, lora: Mapping[str, Any] | None) -> nn.Module:
    if lora is not None:
        from peft import LoraConfig, get_peft_model

        unknown = set(lora) - set(LORA_KEYS)
        if unknown:
            raise ConfigError(f"generator.lora has unknown keys {sorted(unknown)}; it takes {', '.join(LORA_KEYS)}")
        config = LoraConfig(
            r=int(lora["r"]),
            lora_alpha=float(lora["alpha"]),
            lora_dropout=float(lora.get("dropout", 0.0)),
            target_modules=list(lora["target_modules"]),
            layers_to_transform=top_layers(model, lora.get("top_layers")),
            bias="none",
            task_type="CAUSAL_LM",
        )
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=PEFT_NOISE, category=FutureWarning)
            return get_peft_model(model, config)
    out, emb = model.get_output_embeddings(), model.get_input_embeddings()
    if out is not None and out.weight is emb.weight:
        out.weight = nn.Parameter(emb.weight.detach().clone())
        model.config.tie_word_embeddings = False
    for module in model.modules():
        for p in module.parameters(recurse=False):
            p.requires_grad = isinstance(module, (nn.Linear, nn.Embedding))
    return model


def top_layers(model: nn.Module, top: int | None) -> list[int] | None:
    """The indices of the model's last `top` decoder layers (None: every layer gets adapters).

    Adapters on the top layers only make a DP-SGD step cheaper, not just smaller: nothing below the lowest adapter
    needs a gradient, so backward stops there (the frozen layers run forward only).
    """
    if top is None:
        return None
    n = int(model.config.num_hidden_layers)
    return list(range(max(0, n - top), n))


def trainable_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def save(folder: Path, model: nn.Module, state: Mapping[str, Any], lora: bool) -> None:
    """Write the trained weights, then the state file (last, so a half-written checkpoint is never taken as done)."""
    folder.mkdir(parents=True, exist_ok=True)
    if lora:
        model.save_pretrained(str(folder / ADAPTER_DIR))  # type: ignore[operator]
    else:
        from safetensors.torch import save_file

        save_file(
            {n: p.detach().contiguous().cpu() for n, p in model.named_parameters() if p.requires_grad},
            str(folder / FULL_FILE),
        )
    write_json_atomic(folder / STATE_FILE, state)


def read_state(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / STATE_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def load(folder: Path, model: nn.Module, lora: bool) -> None:
    """Put the checkpoint's weights into a model prepared by `prepare_trainable` with the same settings."""
    from safetensors.torch import load_file

    device = next(model.parameters()).device
    if lora:
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(
            model, load_file(str(folder / ADAPTER_DIR / "adapter_model.safetensors"), device=str(device))
        )
        return
    result = model.load_state_dict(load_file(str(folder / FULL_FILE), device=str(device)), strict=False)
    if result.unexpected_keys:
        raise ConfigError(
            f"checkpoint {folder} does not match the model (unexpected {result.unexpected_keys[:3]}); "
            "delete it to re-train"
        )
