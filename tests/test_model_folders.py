"""Local model folders (`model.pretrained=<folder>`): the paper's model family loads from one, bad folders fail in
one line.

The Llama-3-shaped folder (tests/model_folders.py) goes through the loader
the hub models use; each broken folder is refused before any weight is read,
with a message naming the folder (or its config.json), the field and the fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from model_folders import LLAMA3_TINY, model_node
from synbench.core.errors import ConfigError
from synbench.lm.models import load_causal_lm


def test_the_llama3_folder_loads_as_a_llama3_shaped_causal_lm(llama3_folder: Path) -> None:
    loaded = load_causal_lm(model_node(llama3_folder))
    config = loaded.model.config
    assert type(loaded.model).__name__ == "LlamaForCausalLM" and loaded.source == str(llama3_folder)
    assert config.num_key_value_heads < config.num_attention_heads  # grouped-query attention
    assert config.rope_scaling["rope_type"] == "llama3" and config.rope_scaling == {
        **LLAMA3_TINY["rope_scaling"],
        "rope_theta": LLAMA3_TINY["rope_theta"],
    }
    assert len(loaded.tokenizer) == 49152 and loaded.tokenizer.eos_token == "<|im_end|>"  # SmolLM2's tokenizer
    assert str(loaded.model.dtype) == "torch.bfloat16"


def one_line_error(folder: Path | str) -> str:
    with pytest.raises(ConfigError) as caught:
        load_causal_lm(model_node(Path(folder)))
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_folder_that_does_not_exist_is_one_line(tmp_path: Path) -> None:
    message = one_line_error(tmp_path / "no-such-model")
    assert f"model.pretrained={tmp_path / 'no-such-model'}: no such folder" in message and "save_pretrained" in message


def test_a_folder_without_a_tokenizer_is_one_line(tmp_path: Path) -> None:
    from transformers import LlamaConfig

    LlamaConfig(**{**LLAMA3_TINY, "vocab_size": 64}, architectures=["LlamaForCausalLM"]).save_pretrained(tmp_path)
    message = one_line_error(tmp_path)
    assert f"model.pretrained={tmp_path}: no tokenizer file (tokenizer.json" in message
    assert "tokenizer.save_pretrained(folder)" in message


def test_an_architecture_that_is_not_a_causal_lm_is_one_line(tmp_path: Path) -> None:
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    BertModel(config).save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["architectures"] == ["BertModel"]
    message = one_line_error(tmp_path)
    assert f"{tmp_path / 'config.json'}: field architectures names BertModel, not a causal LM" in message
    assert "point model.pretrained at a causal language model" in message


def test_a_hub_id_is_not_taken_for_a_folder() -> None:
    from synbench.lm.models import local_folder

    assert local_folder("meta-llama/Llama-3.2-1B") is None
    assert local_folder("./models/llama") == Path("models/llama") and local_folder("/abs/llama") == Path("/abs/llama")


@pytest.mark.slow
def test_the_packaged_gguf_is_dequantised_once_into_the_model_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The embedded default loads from a plain folder converted once (a GGUF read costs about 50 s of CPU): the same
    weights, tokenizer and chat template as the GGUF read directly, which stays the fallback for an unwritable cache."""
    import logging

    import torch

    from synbench.lm import folders
    from synbench.lm.models import FOLDER_FILES, MODEL_CACHE_ENV

    node = folders.model_node("smollm2_135m")
    caplog.set_level(logging.INFO, logger="synbench.lm.models")
    unwritable = tmp_path / "a-file"
    unwritable.write_text("")
    monkeypatch.setenv(MODEL_CACHE_ENV, str(unwritable))
    direct = load_causal_lm(node)  # the cache cannot be created under a file: the GGUF itself is read
    assert "not writable" in caplog.text and direct.source.endswith(".gguf")

    cache = tmp_path / "cache"
    monkeypatch.setenv(MODEL_CACHE_ENV, str(cache))
    caplog.clear()
    converted = load_causal_lm(node)
    [folder] = [p.parent for p in cache.glob("*/*/config.json")]
    assert "dequantising it once" in caplog.text and all((folder / name).is_file() for name in FOLDER_FILES)
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    caplog.clear()
    cached = load_causal_lm(node)
    assert "dequantising" not in caplog.text and (folder / "model.safetensors").stat().st_mtime_ns == stamp
    assert cached.source == direct.source  # provenance: the packaged file, whichever way it was read

    chat = [{"role": "user", "content": "Rephrase: the pills helped."}]
    prompts = [
        m.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) for m in (direct, cached)
    ]
    assert prompts[0] == prompts[1] and direct.tokenizer.eos_token == cached.tokenizer.eos_token
    ids = direct.tokenizer(prompts[0], return_tensors="pt").input_ids
    assert torch.equal(ids, cached.tokenizer(prompts[0], return_tensors="pt").input_ids)
    with torch.no_grad():
        logits = [m.model(ids).logits for m in (direct, converted, cached)]
    assert torch.equal(logits[0], logits[1]) and torch.equal(logits[0], logits[2])


def test_save_plain_keeps_a_complete_folder_and_replaces_an_incomplete_one(llama3_folder: Path, tmp_path: Path) -> None:
    """Two jobs converting at once both end with the first complete folder; a leftover without weights is replaced."""
    from synbench.lm.models import FOLDER_FILES, save_plain

    loaded = load_causal_lm(model_node(llama3_folder))
    published = tmp_path / "published"
    published.mkdir()
    for name in FOLDER_FILES:  # another process's complete folder, renamed into place before ours
        (published / name).write_text("first")
    save_plain(loaded.model, loaded.tokenizer, published)
    assert all((published / name).read_text() == "first" for name in FOLDER_FILES)

    leftover = tmp_path / "leftover"
    leftover.mkdir()
    (leftover / "config.json").write_text("{}")  # an older copy that stopped before its weights
    save_plain(loaded.model, loaded.tokenizer, leftover)
    again = load_causal_lm(model_node(leftover))
    assert sorted(again.model.state_dict()) == sorted(loaded.model.state_dict())
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary folder left behind
