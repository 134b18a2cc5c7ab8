"""Long documents: the truncation / chunking policy, one Poisson inclusion and one clip per document,
activation checkpointing under per-sample clipping, the CPU attention path, and long sampling's batch size.

Fast tests use the tiny random Llama of conftest (byte-level tokens: one
character is one token); the real SmolLM2 run at 2048 tokens is slow.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.core.privacy import NoiseSource
from synbench.dp.hooks import GhostHooks, PerSampleHooks, group_grad_samples, mixed_linear_norm_sample, uses_ghost_norm
from synbench.dp.poisson import PoissonPlan, poisson_loader
from synbench.generators.dpgen import DPGenGenerator
from synbench.generators.dpgen.data import Collator, DocumentDataset, fit_text
from synbench.generators.dpgen.module import per_sample_loss
from synbench.generators.dpgen.settings import PAPER_LORA, DPGenTrainingOptions
from synbench.generators.dpgen.weights import prepare_trainable
from synbench.lm.generation import kv_bytes_per_sequence, memory_batch_size
from synbench.lm.models import load_causal_lm
from synbench.testing.generator import job_budget
from tests.conftest import compose_config, model_overrides, run_cli, write_jsonl
from tests.test_dpgen import one_thread  # noqa: F401  (autouse: one torch thread for tiny models)

# documents of up to 64 training tokens, a long one cut into at most 3 chunks
CHUNKED_64 = DPGenTrainingOptions(max_seq_len=64, long_documents="chunk", max_chunks=3)


def long_corpus(n: int = 12) -> Corpus:
    """Documents of very different lengths: about 22, 90, 220 and 440 tokens (a byte tokenizer: one per character)."""
    texts = [" ".join(f"day{d} note{i}" for d in range((2, 8, 20, 40)[i % 4])) for i in range(n)]
    return Corpus.build(texts, [["neg" if i % 2 else "pos"] for i in range(n)], ("neg", "pos"), name="long")


def test_policies_cut_a_long_text_as_documented() -> None:
    body = list(range(10))
    assert fit_text(body, 4, "truncate", 3) == [[0, 1, 2, 3]]
    assert fit_text(body, 4, "head_tail", 3) == [[0, 1, 8, 9]]
    assert fit_text(body, 5, "head_tail", 3) == [[0, 1, 2, 8, 9]]
    assert fit_text(body, 4, "chunk", 3) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert fit_text(body, 4, "chunk", 2) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert all(fit_text(body[:3], 4, p, 2) == [[0, 1, 2]] for p in ("truncate", "head_tail", "chunk"))


def test_chunks_end_with_eos_only_at_the_end_and_carry_the_prefix(tiny_model: dict[str, Any]) -> None:
    tok = load_causal_lm(tiny_model).tokenizer
    data = DocumentDataset(long_corpus(), tok, CHUNKED_64)
    assert max(len(doc) for doc in data) == 3 and min(len(doc) for doc in data) == 1
    for doc in data:
        assert all(len(e.input_ids) <= 64 for e in doc)
        assert [e.input_ids[-1] == tok.eos_token_id for e in doc] == [False] * (len(doc) - 1) + [True]
        assert len({tuple(e.input_ids[: e.n_prefix]) for e in doc}) == 1  # every chunk behind the same label prefix
    with pytest.raises(ConfigError, match="long_documents"):
        DocumentDataset(long_corpus(), tok, DPGenTrainingOptions(max_seq_len=64, long_documents="middle"))


def test_chunks_of_a_document_share_one_poisson_inclusion(tiny_model: dict[str, Any]) -> None:
    tok = load_causal_lm(tiny_model).tokenizer
    data = DocumentDataset(long_corpus(40), tok, CHUNKED_64)
    plan = PoissonPlan(len(data), 8, epochs=1)
    collator, drawn = Collator(tok.pad_token_id, "text", chunked=True), []

    def collate(docs: list[Any]) -> Any:  # what the sampler drew: whole documents
        drawn.append([len(doc) for doc in docs])
        return collator(docs)

    loader = poisson_loader(data, plan, collate, NoiseSource().torch("poisson_masks"))
    assert loader.batch_sampler.n == len(data) == 40  # one Bernoulli draw per document, not per chunk
    batches = [b for b in loader if b]
    assert len(drawn) == len(batches) > 0
    for batch, chunks in zip(batches, drawn):
        units = batch["unit"].tolist()
        assert units == sorted(units)  # a document's rows are consecutive ...
        assert [units.count(u) for u in range(len(chunks))] == chunks  # ... and complete: all its chunks, never a part
    assert any(max(c) > 1 for c in drawn)


def test_document_gradient_is_clipped_as_one(tiny_model: dict[str, Any]) -> None:
    """After grouping, a document's per-sample gradient is the gradient of the sum of its chunks' losses."""
    loaded = load_causal_lm(tiny_model)
    torch.manual_seed(0)
    model = prepare_trainable(loaded.model, PAPER_LORA).train()
    data = DocumentDataset(long_corpus(4), loaded.tokenizer, CHUNKED_64)
    collate = Collator(loaded.tokenizer.pad_token_id, "text", chunked=True)
    batch = collate([data[i] for i in range(4)])
    assert batch["unit"].tolist() == [0, 1, 1, 2, 2, 2, 3, 3, 3]
    hooks = PerSampleHooks(model, batch_first=True, loss_reduction="sum")
    hooks.enable_hooks()
    logits = model(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        position_ids=batch["position_ids"],
        use_cache=False,
    ).logits
    per_sample_loss(logits, batch["labels"]).sum().backward()
    params = [p for p in model.parameters() if p.requires_grad]
    group_grad_samples(params, batch["unit"])
    grouped = [p.grad_sample.clone() for p in params]
    hooks.cleanup()
    assert all(g.shape[0] == 4 for g in grouped)
    for d in range(4):
        model.zero_grad()
        one = collate([data[d]])
        logits = model(
            input_ids=one["input_ids"],
            attention_mask=one["attention_mask"],
            position_ids=one["position_ids"],
            use_cache=False,
        ).logits
        per_sample_loss(logits, one["labels"]).sum().backward()
        for p, g in zip(params, grouped):
            assert torch.allclose(g[d], p.grad, rtol=1e-4, atol=1e-6)


def test_chunked_dp_fit_clips_documents_and_is_charged_the_plan(tiny_model: dict[str, Any]) -> None:
    gen = DPGenGenerator(
        model=tiny_model,
        workdir=None,
        epochs=1,
        batch_size=6,
        physical_batch_size=2,
        max_seq_len=64,
        max_new_tokens=16,
        sample_batch_size=4,
        lr=1e-3,
        long_documents="chunk",
        max_chunks=3,
        activation_checkpointing=True,
        precision="bf16-mixed",
    )
    corpus = long_corpus(18)
    report = gen.fit(corpus, job_budget(len(corpus), 4.0), seed=0)
    assert report.epsilon_spent <= 4.0 and report.details["steps"] == 3
    assert report.details["long_documents"] == "chunk" and report.details["n_train_docs"] == 18  # documents, not chunks
    assert max(report.private_stats["batch_size"]) <= 18
    with pytest.raises(ConfigError, match="chunk needs generator.grad_sample_mode=hooks"):
        DPGenGenerator(model=tiny_model, workdir=None, long_documents="chunk", grad_sample_mode="ghost")


@pytest.mark.parametrize("lora", [True, False])
def test_activation_checkpointing_keeps_per_sample_gradients(tiny_model: dict[str, Any], lora: bool) -> None:
    grads, recomputed = {}, {}
    for ckpt in (False, True):
        loaded = load_causal_lm(tiny_model)
        torch.manual_seed(0)
        model = prepare_trainable(loaded.model, PAPER_LORA if lora else None, checkpointing=ckpt).train()
        calls = []
        layer = model.get_base_model().model.layers[0] if lora else model.model.layers[0]
        layer.mlp.register_forward_hook(
            lambda *a, calls=calls: calls.append(torch.is_grad_enabled())
        )  # inside the checkpoint
        batch = Collator(loaded.tokenizer.pad_token_id, "text")(
            list(DocumentDataset(long_corpus(3), loaded.tokenizer, DPGenTrainingOptions(max_seq_len=96)))
        )
        hooks = PerSampleHooks(model, batch_first=True, loss_reduction="sum")
        hooks.enable_hooks()
        logits = model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            position_ids=batch["position_ids"],
            use_cache=False,
        ).logits
        per_sample_loss(logits, batch["labels"]).sum().backward()
        grads[ckpt] = {n: p.grad_sample.clone() for n, p in model.named_parameters() if p.requires_grad}
        recomputed[ckpt] = calls
        hooks.cleanup()
    assert recomputed[False] == [True] and recomputed[True] == [False, True]  # a no-grad forward, then the recompute
    assert grads[True].keys() == grads[False].keys()
    for name, g in grads[False].items():
        assert torch.equal(grads[True][name].flatten(1).norm(dim=1), g.flatten(1).norm(dim=1)), name


def test_ghost_norms_with_checkpointing_and_mixed_choice(tiny_model: dict[str, Any]) -> None:
    loaded = load_causal_lm(tiny_model)
    norms = {}
    for ckpt in (False, True):
        torch.manual_seed(0)
        model = prepare_trainable(load_causal_lm(tiny_model).model, None, checkpointing=ckpt).train()
        batch = Collator(loaded.tokenizer.pad_token_id, "text")(
            list(DocumentDataset(long_corpus(3), loaded.tokenizer, DPGenTrainingOptions(max_seq_len=96)))
        )
        hooks = GhostHooks(model, batch_first=True, loss_reduction="sum", max_grad_norm=1.0)
        hooks.enable_hooks()
        logits = model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            position_ids=batch["position_ids"],
            use_cache=False,
        ).logits
        per_sample_loss(logits, batch["labels"]).sum().backward()
        norms[ckpt] = hooks.get_norm_sample()
        hooks.cleanup()
    assert torch.allclose(norms[True], norms[False], rtol=1e-5)
    # the per-layer choice: ghost norm while T^2 <= d_in d_out, else the per-sample gradient; both give the same norm
    layer = torch.nn.Linear(8, 4)
    a, g = torch.randn(3, 10, 8), torch.randn(3, 10, 4)
    assert not uses_ghost_norm(layer, 10) and uses_ghost_norm(layer, 5)
    exact = torch.einsum("nti,ntj->nij", g, a).flatten(1).norm(dim=1)
    assert torch.allclose(mixed_linear_norm_sample(layer, [a], g)[layer.weight], exact, rtol=1e-5)
    assert torch.allclose(
        mixed_linear_norm_sample(layer, [a[:, :5]], g[:, :5])[layer.weight],
        torch.einsum("nti,ntj->nij", g[:, :5], a[:, :5]).flatten(1).norm(dim=1),
        rtol=1e-5,
    )


def test_cpu_sdpa_matches_eager_on_padded_long_batches(tiny_model: dict[str, Any]) -> None:
    losses = {}
    for attn in ("sdpa", "eager"):
        loaded = load_causal_lm({**tiny_model, "attn_implementation": attn})
        assert loaded.attn_implementation == attn
        batch = Collator(loaded.tokenizer.pad_token_id, "text")(
            list(DocumentDataset(long_corpus(4), loaded.tokenizer, DPGenTrainingOptions(max_seq_len=400)))
        )
        assert (batch["attention_mask"] == 0).any()  # right padding is exercised
        with torch.no_grad():
            logits = loaded.model(
                input_ids=batch["input_ids"],
                attention_mask=batch["attention_mask"],
                position_ids=batch["position_ids"],
                use_cache=False,
            ).logits
        losses[attn] = per_sample_loss(logits, batch["labels"])
    assert torch.allclose(losses["sdpa"], losses["eager"], rtol=1e-4)


def test_long_sampling_batch_follows_the_kv_cache(tiny_model: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    model = load_causal_lm(tiny_model).model
    ids = torch.randint(0, 200, (1, 50))
    with torch.no_grad():
        cache = model(input_ids=ids, use_cache=True).past_key_values
    cached = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
    assert kv_bytes_per_sequence(model, 50) - 3 * model.config.vocab_size * 4 == cached
    import synbench.lm.generation as generation

    per = kv_bytes_per_sequence(model, 4096)
    monkeypatch.setattr(generation, "free_memory", lambda device: int(10 * per / generation.KV_MEMORY_SHARE))
    assert memory_batch_size(model, 4096, 128) == 10 and memory_batch_size(model, 4096, 4) == 4
    monkeypatch.setattr(generation, "free_memory", lambda device: 0)
    assert memory_batch_size(model, 4096, 128) == 1


def long_rows(n: int, words: int) -> list[dict[str, Any]]:
    return [
        {
            "text": " ".join(f"visit {d}: patient {i} stable, medication adjusted." for d in range(words // 6)),
            "label": ["neg" if i % 2 else "pos"],
        }
        for i in range(n)
    ]


@pytest.mark.slow
def test_cli_trains_long_documents_in_bf16(tiny_model: dict[str, Any], tmp_path: Path) -> None:
    train = write_jsonl(tmp_path / "long.jsonl", long_rows(16, 300))
    args = [
        "dataset=files",
        f"dataset.train={train}",
        "dataset.label_space=[neg,pos]",
        "dataset.name=longdocs",
        "dataset.long_documents=chunk",
        "dataset.max_chunks=2",
        "generator.max_seq_len=512",
        "generator.precision=bf16-mixed",
        "generator.activation_checkpointing=true",
        "generator.batch_size=4",
        "generator.physical_batch_size=2",
        "generator.max_new_tokens=64",
        "generator.sample_batch_size=8",
        "metrics=[length]",
        "tracking=none",
        "eps=4",
        f"output_root={tmp_path / 'out'}",
        *model_overrides(tiny_model),
    ]
    assert compose_config(args).generator.long_documents == "chunk"
    run_cli(args, cwd=tmp_path)
    results = json.loads(next((tmp_path / "out").rglob("results.json")).read_text())
    assert results["status"] == "complete" and results["epsilon_spent"] <= 4.0
    assert results["generation"]["long_documents"] == "chunk" and results["generation"]["precision"] == "bf16-mixed"


@pytest.mark.slow
def test_smollm2_2048_tokens_bf16_cli(tmp_path: Path) -> None:
    """The issue's command on the real model (defaults: checkpointing on, 2 documents a physical batch), 4 private
    documents.

    A run of 8 documents with all metrics took 25 min on 2 busy cores; this one fits run_cli's 10 min on quiet ones.
    """
    train = write_jsonl(tmp_path / "long.jsonl", long_rows(5, 2400))
    proc = run_cli(
        [
            "dataset=files",
            f"dataset.train={train}",
            "dataset.label_space=[neg,pos]",
            "generator.max_seq_len=2048",
            "generator.precision=bf16-mixed",
            "eps=4",
            "metrics=[length]",
            "tracking=none",
            f"output_root={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
    )
    results = json.loads(next((tmp_path / "out").rglob("results.json")).read_text())
    assert results["status"] == "complete" and results["epsilon_spent"] <= 4.0, proc.stdout[-2000:]
    assert (
        results["generation"]["activation_checkpointing"] is True and results["generation"]["physical_batch_size"] == 2
    )


def test_flash_attention_only_where_it_gets_half_precision(monkeypatch: pytest.MonkeyPatch) -> None:
    """Selection logic only: no GPU here. Flash-Attention 2 takes fp16/bf16; an fp32 run keeps SDPA."""
    import importlib.util

    import synbench.lm.models as models

    cuda = torch.device("cuda")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if name == "flash_attn" else None)
    assert models.pick_attention("auto", cuda, half=True) == "flash_attention_2"
    assert models.pick_attention("auto", cuda, half=False) == "sdpa"
    assert models.pick_attention("auto", torch.device("cpu"), half=True) == "sdpa"
    assert models.pick_attention("eager", cuda, half=True) == "eager"


def test_long_sequences_default_to_checkpointing_and_token_capped_physical_batches(tiny_model: dict[str, Any]) -> None:
    short, long = (
        DPGenGenerator(model=tiny_model, workdir=None, max_seq_len=n, physical_batch_size=16).settings
        for n in (48, 2048)
    )
    assert (short.checkpointing, short.physical_documents) == (False, 16)
    assert (long.checkpointing, long.physical_documents) == (True, 2)
    chunked = DPGenGenerator(
        model=tiny_model, workdir=None, max_seq_len=1024, long_documents="chunk", max_chunks=4
    ).settings
    assert chunked.physical_documents == 1  # a physical batch counts documents, each up to max_chunks rows
    assert (
        DPGenGenerator(
            model=tiny_model, workdir=None, max_seq_len=2048, activation_checkpointing=False
        ).settings.checkpointing
        is False
    )
    with pytest.raises(ConfigError, match="activation_checkpointing"):
        DPGenGenerator(model=tiny_model, workdir=None, activation_checkpointing="sometimes")
